// The memory model with liveness (oneflow_lite/api/memory_estimate.h,
// runtime/memory_estimate.h) on a 2-layer MLP trained by Adam, worked out by
// hand below from memory_plan.h's sharing rule, and held against the peak
// bytes the runtime's allocators really counted (the measured side).
#include "oneflow_lite/api/memory_estimate.h"

#include <gtest/gtest.h>

#include "oneflow_lite/api/planning.h"
#include "oneflow_lite/api/strategy_spec.h"
#include "tests/cpp/graph/model_makers.h"

namespace ofl {
namespace {

// x [16, 8] (fed) -> matmul w1 [8, 32] -> relu -> matmul w2 [32, 4] ->
// reduce_mean -> loss, trained by Adam (state w/m, w/v of w's shape and
// w/step, an int64 scalar). Every tensor float32.
constexpr int64_t kB = 16, kI = 8, kH = 32, kO = 4;

OpGraph Mlp() {
  OpGraph g;
  CHECK(g.AddInput("x", {{kB, kI}, DataType::kFloat32}).ok());
  CHECK(g.AddVariable("w1", Tensor::Full({kI, kH}, DataType::kFloat32, 0.1), true).ok());
  CHECK(g.AddVariable("w2", Tensor::Full({kH, kO}, DataType::kFloat32, 0.1), true).ok());
  std::string y = testing::Op(g, "matmul", {"x", "w1"}, {}, "fc1");
  y = testing::Op(g, "relu", {y}, {}, "relu");
  y = testing::Op(g, "matmul", {y, "w2"}, {}, "fc2");
  testing::Train(g, testing::Op(g, "reduce_mean", {y}, {}, "mean"), "adam");
  return g;
}

// Runs one step of the session and returns each rank's allocator peak.
std::vector<int64_t> MeasuredPeak(const OpGraph& g, const Strategy& s,
                                  const DistributedOptions& options) {
  auto session = DistributedSession::Create(g, s, {g.loss()}, options);
  CHECK(session.ok()) << session.status().message();
  std::vector<Tensor> out;
  Status run = session.value()->Run({{"x", Tensor::Full({kB, kI}, DataType::kFloat32, 1.0)}},
                                    {g.loss()}, &out);
  CHECK(run.ok()) << run.message();
  return session.value()->PeakBytes();
}

DistributedOptions OneSlot() {
  DistributedOptions o;
  o.num_slots = 1;
  o.num_threads = 1;
  return o;
}

// Runs one step of a single-device Session and returns its allocator's peak.
int64_t MeasuredSingleDevicePeak(const OpGraph& g, const SessionOptions& options) {
  auto session = Session::Create(g, options);
  CHECK(session.ok()) << session.status().message();
  std::vector<Tensor> out;
  Status run = session.value()->Run({{"x", Tensor::Full({kB, kI}, DataType::kFloat32, 1.0)}},
                                    {g.loss()}, &out);
  CHECK(run.ok()) << run.message();
  return session.value()->peak_bytes();
}

// One device (Session: the one lowering on cpu rank 0, every tensor whole,
// one slot per register).
// Tasks (T = compute), registers and their bytes:
//   src: x -> X [16, 8] 512          T1 fc1: X, w1 -> Y1 [16, 32] 2048
//   T2 relu: Y1 -> A 2048            T3 fc2: A, w2 -> Y2 [16, 4] 256
//   T4 mean: Y2 -> L (scalar, 4)     T5 seed ones_like: L -> S (4)
//   T6 scalar_mul: S -> S2 (4)       T7 broadcast_to: S2 -> D2 [16, 4] 256
//   T8 dA = D2 w2^T -> DA 2048       T9 dw2 = A^T D2 -> G2 [32, 4] 512
//   T10 relu_grad: A, DA -> DY1 2048 T11 dw1 = X^T DY1 -> G1 [8, 32] 1024
//   U1, U2: adam_update of w1 (reads G1) and of w2 (reads G2).
// Ctrl edges T1 -> U1 and T3, T8 -> U2 (in-place order), one slot each, so
// the next iteration's T1 waits for U1, its T3 and T8 for U2.
// Happens-before in an iteration: T1 .. T7, then T8 -> T10 -> T11 -> U1,
// and T9 -> U2 apart (T9 unordered with T8, T10, T11, U1). Into the next
// iteration ('): everything before U1 comes before T1' (so before all of
// the next iteration but its source); T9 only before T2' (it reads A); U2
// only before T3'; the source x' waits for T1 and T11 (X's readers).
// Sharing (memory_plan.h: every reader of a before b's writer in one
// iteration, and every reader of b before a's writer in the next),
// placement by size (rounded to 64), then id, each at the lowest 64-aligned
// offset clear of the placed registers it may not share with:
//   Y1 [0, 2048); A conflicts with Y1 (T2 reads one, writes the other)
//     -> [2048, 4096); DA shares with Y1 (T2 < T8; T10 < T1') -> [0, 2048);
//   DY1 shares with Y1 only -> [4096, 6144);
//   G1 (1024) shares with Y1 and DA, not A (T9 unordered with T11) nor DY1
//     -> [0, 1024);
//   X (512) shares with nothing (x' waits only for T1, T11) -> [6144, 6656);
//   G2 (512) shares with nothing (U2 is before no T1', T9 unordered with
//     T8, T10, T11) -> [6656, 7168);
//   Y2 (256) shares with Y1, DA, DY1, G1, G2 (U2 < T3'), not A, X -> [0, 256);
//   D2 (256) shares with Y2 only (T8, T9 < T3') -> [7168, 7424);
//   L (64) shares with all but A, X, Y2 -> [256, 320);
//   S with all but A, X, L -> [0, 64); S2 with all but A, X, D2, S -> [64, 128).
// Arena: 7424 bytes (unshared: 4 x 2048 + 1024 + 2 x 512 + 2 x 256 + 3 x 64
// = 10944). Variables: w1 1024 + w2 512 = 1536 parameter bytes; Adam state
// 2 x 1536 + 2 x 8 (int64 steps) = 3088.
// Undo copies (transactional steps, memory_plan.h "Undo copies"): U1 saves
// w1, w1/m, w1/v (1024 each) and w1/step (64 rounded), U2 the same of w2
// (512 each, 64); they live to the end of the run, so they share bytes only
// with registers all of whose readers act before their writer: before U1:
// Y1, DA, DY1, X, Y2, S, S2 (not A, G2, D2: T9 is unordered with U1; not
// G1, U1 reads it); before U2 (T1 .. T9 but T10, T11): Y1, Y2, D2, S, S2.
// The plan places them with the registers (the variables' registers come
// first in the plan, so they win ties of size): Y1 [0, 2048), A [2048,
// 4096), DA [0, 2048), DY1 [4096, 6144) as before; w1's three at [0, 1024),
// [1024, 2048), [4096, 5120); G1 clear of A, DY1 and those -> [6144, 7168);
// w2's three clear of A, DA, DY1, G1 and w1's -> [7168, 8704); X clear of
// the activations and w2's -> [8704, 9216); G2 clear of all -> [9216,
// 9728); Y2 [0, 256); D2 within w2's [7168, 7424); w1/step in the gap
// [5120, 5184); w2/step clear of A, DA, DY1, G1, X, G2 and the undo copies
// -> [9728, 9792); L, S, S2 below that. Arena 9792: the undo copy adds
// 9792 - 7424 = 2368 bytes, not its 4624.
// Peak: 7424 + 1536 + 3088 + 2368 = 14416 bytes.
TEST(MemoryEstimate, MlpOnOneDeviceWorkedOutByHand) {
  OpGraph g = Mlp();
  SessionOptions options;
  options.num_threads = 1;
  auto m = PredictSingleDeviceMemory(g, options);
  ASSERT_TRUE(m.ok()) << m.status().message();
  ASSERT_EQ(m.value().ranks.size(), 1u);
  const RankMemory& r = m.value().ranks[0];
  EXPECT_EQ(r.arena_bytes, 7424);
  EXPECT_EQ(r.planned_bytes, 10944);
  EXPECT_EQ(r.parameter_bytes, 1536);
  EXPECT_EQ(r.optimizer_state_bytes, 3088);
  EXPECT_EQ(r.undo_bytes, 2368);
  EXPECT_EQ(r.boxing_bytes + r.bucket_bytes + r.register_bytes, 0);  // ctrl registers: 0 B
  EXPECT_EQ(r.total_bytes, 14416);
  EXPECT_EQ(MeasuredSingleDevicePeak(g, options), 14416);
}

// Without transactional steps no undo copy: 14416 - 2368. Without memory
// planning every register keeps its own buffer: the raw 10764 bytes (4 x
// 2048 + 1024 + 2 x 512 + 2 x 256 + 3 x 4) in place of the arena; with
// transactional steps then, the undo copy is whole buffers: 4624 bytes.
TEST(MemoryEstimate, UndoCopyAndArenaFollowTheOptions) {
  OpGraph g = Mlp();
  SessionOptions options;
  options.num_threads = 1;
  options.transactional = false;
  EXPECT_EQ(PredictSingleDeviceMemory(g, options).value().max_bytes, 14416 - 2368);
  EXPECT_EQ(MeasuredSingleDevicePeak(g, options), 14416 - 2368);
  options.plan_memory = false;
  const RankMemory r = PredictSingleDeviceMemory(g, options).value().ranks[0];
  EXPECT_EQ(r.arena_bytes, 0);
  EXPECT_EQ(r.register_bytes, 10764);
  EXPECT_EQ(r.total_bytes, 14416 - 2368 - 7424 + 10764);
  EXPECT_EQ(MeasuredSingleDevicePeak(g, options), 14416 - 2368 - 7424 + 10764);
  options.transactional = true;
  const RankMemory whole = PredictSingleDeviceMemory(g, options).value().ranks[0];
  EXPECT_EQ(whole.undo_bytes, 4624);
  EXPECT_EQ(whole.total_bytes, 14416 - 2368 - 7424 + 10764 + 4624);
  EXPECT_EQ(MeasuredSingleDevicePeak(g, options), 14416 - 2368 - 7424 + 10764 + 4624);
}

// Two devices, the data_parallel preset (x S(0), variables B, ops follow the
// data), gradients all-reduced one by one (no buckets), one slot. On each
// rank (batch 8 of 16), in the preset's layout: Y2 = fc2 [8, 4] stays S(0)
// and the mean gives the loss as P (reduce_mean divides by the logical
// count); the seed takes it to B, so its chain S, S2, D2 [16, 4] is B; dA =
// D2 w2^T is B [16, 32] and sliced to S(0) (boxing), D2 too for dw2 = A^T D2
// (P); both weight gradients P, each all-reduced into a B register (boxing).
// Registers read by a BOXING task keep buffers of their own (memory_plan.h
// plans only registers whose readers compute): D2 256, DA 2048, G2 [32, 4]
// 512, G1 [8, 32] 1024 = 3840 bytes; the boxing outputs too: D2 sliced 128,
// DA sliced 1024, G1 reduced 1024, G2 reduced 512 = 2688.
// Planned: X [8, 8] 256, Y1 and A [8, 32] 1024 each, DY1 [8, 32] 1024, Y2
// [8, 4] 128, L, S, S2 (4 each, 64 rounded): unshared 256 + 3 x 1024 + 128 +
// 3 x 64 = 3648. Sharing: DY1 with Y1 (relu < relu_grad; dw1 < U1 < fc1'),
// not A; X with nothing; L with nothing; S and S2 with Y1 and DY1 (the seed
// chain runs after relu and before dA's slice, and relu_grad'); Y2 (fc2 to
// mean) within Y1's bytes as well (relu, Y1's reader, acts before fc2
// writes Y2; mean, Y2's reader, acts before the seed chain and relu_grad
// write there): the arena stays 2368 bytes.
// Variables: as on one device (B: every rank holds them whole). Undo copies
// (as on one device: dead before U1: Y1, DY1, X, Y2, S, S2; before U2: Y1,
// Y2, S, S2; L's reader, the loss's sink, is ordered with neither; the
// variables' registers win ties of size): w1's three (1024 each) at [0,
// 1024), [1024, 2048), [2048, 3072); Y1 [0, 1024); A, clear of them,
// [3072, 4096); DY1 [0, 1024); w2's three (512) clear of A, DY1 and w1's ->
// [4096, 5632); X within w1/m's bytes [1024, 1280); Y2 [0, 128); w1/step
// [5632, 5696), w2/step [5696, 5760), L clear of all -> [5760, 5824); S,
// S2 below. Arena 5824: the undo copy adds 5824 - 2368 = 3456 bytes.
// Peak per rank: 2368 + 3840 + 2688 + 1536 + 3088 + 3456 = 16976 bytes.
TEST(MemoryEstimate, MlpDataParallelOnTwoDevicesWorkedOutByHand) {
  OpGraph g = Mlp();
  PlanRequest request;
  request.searcher = "data_parallel";
  auto planned = PlanRequested(g, testing::Mesh({2}), testing::TwoLevelCluster(), request);
  ASSERT_TRUE(planned.ok()) << planned.status().message();
  const Strategy& s = planned.value().strategy;
  DistributedOptions options = OneSlot();
  options.gradient_bucket_bytes = 0;
  auto m = PredictPlannedMemory(g, planned.value(), {g.loss()}, options);
  ASSERT_TRUE(m.ok()) << m.status().message();
  ASSERT_EQ(m.value().ranks.size(), 2u);
  for (const RankMemory& r : m.value().ranks) {
    EXPECT_EQ(r.arena_bytes, 2368) << r.rank;
    EXPECT_EQ(r.planned_bytes, 3648) << r.rank;
    EXPECT_EQ(r.register_bytes, 3840) << r.rank;
    EXPECT_EQ(r.boxing_bytes, 2688) << r.rank;
    EXPECT_EQ(r.bucket_bytes, 0) << r.rank;
    EXPECT_EQ(r.parameter_bytes, 1536) << r.rank;
    EXPECT_EQ(r.optimizer_state_bytes, 3088) << r.rank;
    EXPECT_EQ(r.buffer_bytes, 0) << r.rank;
    EXPECT_EQ(r.undo_bytes, 3456) << r.rank;
    EXPECT_EQ(r.total_bytes, 16976) << r.rank;
  }
  EXPECT_EQ(MeasuredPeak(g, s, options), (std::vector<int64_t>{16976, 16976}));
  // With the default buckets the prediction still is what the runtime counts.
  options.gradient_bucket_bytes = DistributedOptions{}.gradient_bucket_bytes;
  auto bucketed = PredictPlannedMemory(g, planned.value(), {g.loss()}, options);
  ASSERT_TRUE(bucketed.ok()) << bucketed.status().message();
  EXPECT_GT(bucketed.value().ranks[0].bucket_bytes, 0);
  EXPECT_EQ(MeasuredPeak(g, s, options), bucketed.value().PeakBytes());
}

TEST(MemoryEstimate, BadOptionsAreNamed) {
  OpGraph g = Mlp();
  Strategy s = MakeStrategy(g, testing::Mesh({1}), StrategySpec{}).value();
  DistributedOptions o;
  o.num_slots = 0;
  EXPECT_EQ(PredictSessionMemory(g, s, {}, o).status().message(),
            "memory estimate: num_slots=0 must be >= 1 (buffers per register)");
  o = DistributedOptions{};
  o.gradient_bucket_bytes = -1;
  EXPECT_EQ(PredictSessionMemory(g, s, {}, o).status().message(),
            "memory estimate: gradient_bucket_bytes=-1 must be >= 0 (0: no buckets)");
}

}  // namespace
}  // namespace ofl
