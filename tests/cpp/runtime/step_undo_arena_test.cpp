// Transactional steps with the undo copy in the arena (runtime/step_undo.h,
// runtime/memory_plan.h "Undo copies", "Spare slots"): on a host rank, each
// updated variable is saved by its update's act just before the kernel,
// into arena bytes that are dead by then (one-slot registers) or that the
// run never writes (the spare slots of two-slot registers). A run that fails after
// the update ran, or before it, leaves every variable bitwise as before; a
// run of several iterations gives the copies whole buffers first. Oracles:
// the memory plan worked out by hand below, the allocator's own count, a
// copy of the variables taken with GetVariable before the run, and a second
// runtime that never failed.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>

#include "ops/kernel.h"
#include "plan_maker.h"
#include "runtime/memory_estimate.h"
#include "runtime/memory_plan.h"
#include "runtime/plan_check.h"
#include "runtime/runtime.h"

namespace ofl {
namespace {

using proto::TaskProto;

constexpr int64_t kN = 64;  // 256 bytes of float32
constexpr char kRestored[] =
    " (variables and optimizer state restored to their values before this run)";

// test_late copies its input; z[0] < 0 is rejected.
OFL_REGISTER_KERNEL("test_late", DeviceType::kCPU, [](KernelContext& k) {
  const float z0 = k.in(0).data<float>()[0];
  if (z0 < 0) {
    k.Fail("z[0]=", z0, " is negative");
    return;
  }
  k.out(0).CopyFrom(k.in(0));
});

// One rank, `slots` slots in every non-persistent register (one: the
// arena's plan; two: DistributedSession's default). Registers (ids in this
// order): w, m, v [kN], step (int64 [1]), x [kN] (fed), c = relu(x), r =
// relu(c), y = add(r, w) (the "gradient"), z [1] (fed), o = test_late(z)
// (fetched). Tasks: adam_update(w, y, m, v, step) = U; a ctrl register
// relu1 -> U (so U(i) comes before relu1(i + 1)); a ctrl register U -> late,
// so test_late acts after U: a bad z fails the run after the update ran.
proto::Plan ArenaAdamPlan(int64_t slots = 1) {
  PlanMaker p(1);
  const int64_t w = p.Register("w", 0, {kN}, 1, true);
  const int64_t m = p.Register("m", 0, {kN}, 1, true);
  const int64_t v = p.Register("v", 0, {kN}, 1, true);
  const int64_t step = p.Register("step", 0, {1}, 1, true);
  p.plan().mutable_registers(step)->mutable_desc()->set_dtype("int64");
  const int64_t x = p.Register("x", 0, {kN}, slots);
  const int64_t c = p.Register("c", 0, {kN}, slots);
  const int64_t r = p.Register("r", 0, {kN}, slots);
  const int64_t y = p.Register("y", 0, {kN}, slots);
  const int64_t z = p.Register("z", 0, {1}, slots);
  const int64_t o = p.Register("o", 0, {1}, slots);
  const int64_t relu_done = p.Register("ctrl/relu1->update", 0, {0}, slots);
  const int64_t updated = p.Register("ctrl/update->late", 0, {0}, slots);
  for (auto [name, reg] : {std::pair{"w", w}, {"m", m}, {"v", v}, {"step", step}}) {
    p.Variable(name, 0, 0, reg);
  }
  p.Source("x", 0, 0, x);
  p.Source("z", 0, 0, z);
  p.Compute("relu", "relu1", 0, 0, {x}, {c})->add_ctrl_outputs(relu_done);
  p.Compute("relu", "relu2", 0, 0, {c}, {r});
  p.Compute("add", "add", 0, 0, {r, w}, {y});
  TaskProto* update = p.Compute("adam_update", "update", 0, 0, {w, y, m, v, step}, {});
  SetAttr(update, "lr", 0.1);
  update->add_ctrl_inputs(relu_done);
  update->add_ctrl_outputs(updated);
  p.Compute("test_late", "late", 0, 0, {z}, {o})->add_ctrl_inputs(updated);
  p.Sink("o", 0, 0, o);
  return p.plan();
}

RuntimeOptions Options(bool transactional = true) {
  RuntimeOptions options;
  options.timeout = std::chrono::milliseconds(20000);
  options.num_threads = 2;
  options.transactional = transactional;
  return options;
}

std::unique_ptr<Runtime> MakeRuntime(const RuntimeOptions& options, int64_t slots = 1) {
  auto rt = Runtime::Create(ArenaAdamPlan(slots), options).value();
  EXPECT_TRUE(
      rt->SetVariable("w", 0, MakeTensor({kN}, [](int64_t i) { return 0.1 * i - 2; })).ok());
  EXPECT_TRUE(rt->SetVariable("m", 0, MakeTensor({kN}, [](int64_t i) { return 0.01 * i; })).ok());
  EXPECT_TRUE(rt->SetVariable("v", 0, MakeTensor({kN}, [](int64_t i) { return 0.02 * i; })).ok());
  Tensor step(Shape({1}), DataType::kInt64);
  step.data<int64_t>()[0] = 5;
  EXPECT_TRUE(rt->SetVariable("step", 0, step).ok());
  return rt;
}

// Iteration i's feeds: x from a formula, z = 1 (-1 in iteration `bad_z`).
std::vector<TensorMap> Feeds(int64_t n, int64_t bad_z = -1) {
  std::vector<TensorMap> feeds(n);
  for (int64_t i = 0; i < n; ++i) {
    feeds[i][{"x", 0}] = MakeTensor({kN}, [&](int64_t e) { return 0.5 * e - 3 + i; });
    feeds[i][{"z", 0}] = MakeTensor({1}, [&](int64_t) { return i == bad_z ? -1.0 : 1.0; });
  }
  return feeds;
}

TensorMap Snapshot(const Runtime& rt) {
  TensorMap out;
  for (const TensorKey& key : rt.VariableKeys()) out[key] = rt.GetVariable(key.name, 0).value();
  return out;
}

bool Same(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && a.dtype() == b.dtype() &&
         std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0;
}

void ExpectSame(const TensorMap& got, const TensorMap& want) {
  ASSERT_EQ(got.size(), want.size());
  for (const auto& [key, t] : want) EXPECT_TRUE(Same(got.at(key), t)) << key.name;
}

bool EndsWithRestored(const std::string& message) {
  const std::string tail = kRestored;
  return message.size() > tail.size() &&
         message.compare(message.size() - tail.size(), tail.size(), tail) == 0;
}

// The memory plan by hand (memory_plan.h; ctrl registers take no bytes).
// Without undo copies: x conflicts with c (relu1 reads one, writes the
// other), r and y (their readers act before no x'); c shares with y (relu2
// < add; U < relu1', through the ctrl register); r conflicts with c and y;
// z and o (4 bytes, 64 rounded) share with nothing. Placement: x [0, 256),
// c [256, 512), r [512, 768), y [256, 512), z [768, 832), o [832, 896):
// 896 bytes (raw 4 x 256 + 2 x 4 = 1032).
// With the undo copies of w, m, v (256 each) and step (8, 64 rounded),
// saved by U: dead before U are x, c, r (their readers relu1, relu2, add
// act before it); y (U reads it), z and o (test_late acts after U) are not.
// By size, then id (the variables first): w [0, 256), m [256, 512), v [512,
// 768); x [0, 256), c [256, 512), r [512, 768) over them; y clear of the
// copies and of x, r -> [768, 1024); step clear of the copies and y ->
// [1024, 1088); z [1088, 1152), o [1152, 1216). Arena 1216: the undo copy
// costs 1216 - 896 = 320 bytes, not its 3 x 256 + 8 = 776.
constexpr int64_t kArenaUndoBytes = 320;
constexpr int64_t kWholeUndoBytes = 3 * kN * 4 + 8;

TEST(StepUndoArenaTest, MemoryPlanPlacesTheUndoCopiesAsWorkedOutByHand) {
  const proto::Plan plan = ArenaAdamPlan();
  const std::vector<int64_t> producer = CheckPlan(plan).value();
  const MemoryPlan without = PlanRegisterMemory(plan, 0, producer, false);
  EXPECT_EQ(without.arena_bytes, 896);
  EXPECT_EQ(without.undo_arena_bytes, 0);
  EXPECT_EQ(without.offset,
            (std::vector<int64_t>{-1, -1, -1, -1, 0, 256, 512, 256, 768, 832, -1, -1}));
  const MemoryPlan with = PlanRegisterMemory(plan, 0, producer, true);
  EXPECT_EQ(with.arena_bytes, 1216);
  EXPECT_EQ(with.undo_arena_bytes, kArenaUndoBytes);
  EXPECT_EQ(with.offset,
            (std::vector<int64_t>{-1, -1, -1, -1, 0, 256, 512, 768, 1088, 1152, -1, -1}));
  EXPECT_EQ(with.undo_offset,
            (std::vector<int64_t>{0, 256, 512, 1024, -1, -1, -1, -1, -1, -1, -1, -1}));
}

TEST(StepUndoArenaTest, UndoCopyGoesIntoDeadArenaBytes) {
  auto on = MakeRuntime(Options(true));
  auto off = MakeRuntime(Options(false));
  EXPECT_EQ(on->undo_bytes(), std::vector<int64_t>{kArenaUndoBytes});
  EXPECT_EQ(on->peak_bytes()[0] - off->peak_bytes()[0], kArenaUndoBytes);
  // Runs of one iteration allocate nothing more.
  const int64_t peak = on->peak_bytes()[0];
  for (int k = 0; k < 2; ++k) ASSERT_TRUE(on->Run(1, Feeds(1), {"o"}).ok());
  EXPECT_EQ(on->peak_bytes()[0], peak);
}

TEST(StepUndoArenaTest, FailureAfterTheUpdateRanRestoresEveryVariable) {
  // Without transactions the same failing run leaves the update in place:
  // so the update did run before test_late failed.
  auto partial = MakeRuntime(Options(false));
  const TensorMap start = Snapshot(*partial);
  ASSERT_FALSE(partial->Run(1, Feeds(1, 0), {"o"}).ok());
  EXPECT_FALSE(Same(Snapshot(*partial).at({"w", 0}), start.at({"w", 0})));
  EXPECT_EQ(Snapshot(*partial).at({"step", 0}).data<int64_t>()[0], 6);

  auto rt = MakeRuntime(Options());
  auto good = rt->Run(1, Feeds(1), {"o"});  // a step first: the state is not the initial one
  ASSERT_TRUE(good.ok()) << good.status().message();
  const TensorMap before = Snapshot(*rt);
  for (int k = 0; k < 2; ++k) {  // twice: the arena was reused by the run in between
    auto failed = rt->Run(1, Feeds(1, 0), {"o"});
    ASSERT_FALSE(failed.ok());
    EXPECT_EQ(failed.status().message(),
              std::string("rank 0: task 10 (test_late 'late'): z[0]=-1 is negative") + kRestored);
    ExpectSame(Snapshot(*rt), before);
    EXPECT_EQ(rt->iteration(), 1);
  }
  // The retry: as a runtime that ran the two good steps.
  auto retried = rt->Run(1, Feeds(1), {"o"});
  ASSERT_TRUE(retried.ok()) << retried.status().message();
  auto fresh = MakeRuntime(Options());
  for (int k = 0; k < 2; ++k) ASSERT_TRUE(fresh->Run(1, Feeds(1), {"o"}).ok());
  ExpectSame(Snapshot(*rt), Snapshot(*fresh));
  EXPECT_EQ(Snapshot(*rt).at({"step", 0}).data<int64_t>()[0], 7);
}

TEST(StepUndoArenaTest, RunOfSeveralIterationsGivesTheCopiesWholeBuffersOnce) {
  auto rt = MakeRuntime(Options());
  const int64_t peak = rt->peak_bytes()[0];
  const TensorMap before = Snapshot(*rt);
  // Iteration 2 fails after iterations 0 and 1 updated the variables.
  auto failed = rt->Run(3, Feeds(3, 2), {"o"});
  ASSERT_FALSE(failed.ok());
  EXPECT_TRUE(EndsWithRestored(failed.status().message())) << failed.status().message();
  ExpectSame(Snapshot(*rt), before);
  EXPECT_EQ(rt->iteration(), 0);
  EXPECT_EQ(rt->peak_bytes()[0], peak + kWholeUndoBytes);
  EXPECT_EQ(rt->undo_bytes(), std::vector<int64_t>{kArenaUndoBytes + kWholeUndoBytes});
  // Again, and then one iteration at a time: no more bytes; the state
  // matches a runtime that never failed.
  ASSERT_TRUE(rt->Run(2, Feeds(2), {"o"}).ok());
  ASSERT_TRUE(rt->Run(1, Feeds(1), {"o"}).ok());
  EXPECT_EQ(rt->peak_bytes()[0], peak + kWholeUndoBytes);
  auto fresh = MakeRuntime(Options(false));
  ASSERT_TRUE(fresh->Run(2, Feeds(2), {"o"}).ok());
  ASSERT_TRUE(fresh->Run(1, Feeds(1), {"o"}).ok());
  ExpectSame(Snapshot(*rt), Snapshot(*fresh));
}

// The two-slot plan by hand (memory_plan.h "Spare slots"): no register has
// one slot, so nothing is planned; slot 1 of x, c, r, y (256 bytes each) and
// of z, o (4 bytes, 64 rounded) joins the arena (1032 bytes as buffers of
// their own), spare slots never sharing with each other, the undo copies of
// w, m, v (256 each) and step (8, 64 rounded) over them. By size, then id:
// w [0, 256), m [256, 512), v [512, 768); the spares x [0, 256), c [256,
// 512), r [512, 768), y [768, 1024); step clear of w, m, v -> [768, 832)
// (over y's spare); z [1024, 1088), o [1088, 1152). Arena 1152 = 1032 of
// spare slots + 120: the undo copy costs 120 bytes, not its 776.
constexpr int64_t kSpareUndoBytes = 120;

TEST(StepUndoArenaTest, TwoSlotPlanPlacesTheUndoCopiesOverSpareSlotsAsWorkedOutByHand) {
  const proto::Plan plan = ArenaAdamPlan(2);
  const std::vector<int64_t> producer = CheckPlan(plan).value();
  const std::vector<int64_t> none(plan.registers_size(), -1);
  const MemoryPlan without = PlanRegisterMemory(plan, 0, producer, false);
  EXPECT_EQ(without.arena_bytes, 0);
  EXPECT_EQ(without.spare_offset, none);
  const MemoryPlan with = PlanRegisterMemory(plan, 0, producer, true);
  EXPECT_EQ(with.arena_bytes, 1152);
  EXPECT_EQ(with.spare_slot_bytes, 4 * kN * 4 + 2 * 4);
  EXPECT_EQ(with.undo_arena_bytes, kSpareUndoBytes);
  EXPECT_EQ(with.offset, none);
  EXPECT_EQ(with.undo_offset,
            (std::vector<int64_t>{0, 256, 512, 768, -1, -1, -1, -1, -1, -1, -1, -1}));
  EXPECT_EQ(with.spare_offset,
            (std::vector<int64_t>{-1, -1, -1, -1, 0, 256, 512, 768, 1024, 1088, -1, -1}));
}

TEST(StepUndoArenaTest, TwoSlotUndoCopyCostsWhatTheSpareSlotsDoNotCover) {
  auto on = MakeRuntime(Options(true), 2);
  auto off = MakeRuntime(Options(false), 2);
  EXPECT_EQ(on->undo_bytes(), std::vector<int64_t>{kSpareUndoBytes});
  // Off: x, c, r, y two slots of 256, z, o two of 4, the variables 776.
  EXPECT_EQ(off->peak_bytes()[0], 4 * 2 * 256 + 2 * 2 * 4 + 776);
  EXPECT_EQ(on->peak_bytes()[0] - off->peak_bytes()[0], kSpareUndoBytes);
  for (bool transactional : {true, false}) {  // the estimate prices what was allocated
    const auto estimate = EstimatePlanMemory(ArenaAdamPlan(2), {true, transactional}).value().at(0);
    EXPECT_EQ(estimate.total(), (transactional ? on : off)->peak_bytes()[0]);
    EXPECT_EQ(estimate.undo_bytes, transactional ? kSpareUndoBytes : 0);
  }
  const int64_t peak = on->peak_bytes()[0];
  for (int k = 0; k < 2; ++k) ASSERT_TRUE(on->Run(1, Feeds(1), {"o"}).ok());
  EXPECT_EQ(on->peak_bytes()[0], peak);
}

TEST(StepUndoArenaTest, TwoSlotFailureAfterTheUpdateRanRestoresEveryVariable) {
  auto partial = MakeRuntime(Options(false), 2);  // the update did run before the failure
  const TensorMap start = Snapshot(*partial);
  ASSERT_FALSE(partial->Run(1, Feeds(1, 0), {"o"}).ok());
  EXPECT_EQ(Snapshot(*partial).at({"step", 0}).data<int64_t>()[0], 6);
  EXPECT_FALSE(Same(Snapshot(*partial).at({"w", 0}), start.at({"w", 0})));

  auto rt = MakeRuntime(Options(), 2);
  ASSERT_TRUE(rt->Run(1, Feeds(1), {"o"}).ok());
  const TensorMap before = Snapshot(*rt);
  for (int k = 0; k < 2; ++k) {
    auto failed = rt->Run(1, Feeds(1, 0), {"o"});
    ASSERT_FALSE(failed.ok());
    EXPECT_TRUE(EndsWithRestored(failed.status().message())) << failed.status().message();
    ExpectSame(Snapshot(*rt), before);
  }
  // Two iterations write the spare slots (the copies get whole buffers),
  // then one again over the spare slots: as a runtime that never failed.
  ASSERT_TRUE(rt->Run(2, Feeds(2), {"o"}).ok());
  auto failed = rt->Run(1, Feeds(1, 0), {"o"});
  ASSERT_FALSE(failed.ok());
  ASSERT_TRUE(rt->Run(1, Feeds(1), {"o"}).ok());
  auto fresh = MakeRuntime(Options(false), 2);
  ASSERT_TRUE(fresh->Run(1, Feeds(1), {"o"}).ok());
  ASSERT_TRUE(fresh->Run(2, Feeds(2), {"o"}).ok());
  ASSERT_TRUE(fresh->Run(1, Feeds(1), {"o"}).ok());
  ExpectSame(Snapshot(*rt), Snapshot(*fresh));
  EXPECT_EQ(Snapshot(*rt).at({"step", 0}).data<int64_t>()[0], 9);
  EXPECT_EQ(rt->undo_bytes(), std::vector<int64_t>{kSpareUndoBytes + kWholeUndoBytes});
}

}  // namespace
}  // namespace ofl
