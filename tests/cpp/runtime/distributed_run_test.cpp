// The actor runtime on plans of the real compiler: a two-layer MLP training
// step (autodiff, SGD with momentum) lowered by graph/distributed_lowering.h
// under data parallelism on [2] and seeded random strategies on [2, 2], with
// runtime/boxing.h's RunBoxingStep behind the boxing hook; its losses over
// several iterations equal a plain-loop reference's (mlp_reference.h), with
// 1 and 2 slots; so does the one-device plan (every tensor whole on one rank,
// one slot: what api/Session runs), which holds one task per source and op in
// graph order and nothing else. Every run has a runtime timeout, the
// communicators theirs, and ctest its own.
#include <gtest/gtest.h>

#include <set>

#include "graph/autodiff.h"
#include "graph/distributed_lowering.h"
#include "graph/optimizer_pass.h"
#include "graph/strategy.h"
#include "mlp_reference.h"
#include "oneflow_lite/core/slicing.h"
#include "ops/array/strided_copy.h"
#include "plan_maker.h"
#include "runtime/boxing.h"
#include "runtime/runtime.h"

namespace ofl {
namespace {

using std::chrono::milliseconds;

// x [8, 6] -> fc1 [6, 5] -> relu -> fc2 [5, 3] -> mean; SGD, momentum 0.9.
OpGraph MlpGraph() {
  OpGraph g;
  CHECK(g.AddInput("x", {{8, 6}, DataType::kFloat32}).ok());
  CHECK(
      g.AddVariable("w1", MakeTensor({6, 5}, [](int64_t i) { return 0.05 * i - 0.7; }), true).ok());
  CHECK(
      g.AddVariable("w2", MakeTensor({5, 3}, [](int64_t i) { return 0.6 - 0.08 * i; }), true).ok());
  std::string h = g.AddOp("matmul", {"x", "w1"}, {}, "fc1").value()[0];
  std::string a = g.AddOp("relu", {h}, {}, "act").value()[0];
  std::string y = g.AddOp("matmul", {a, "w2"}, {}, "fc2").value()[0];
  std::string loss = g.AddOp("reduce_mean", {y}, {}, "mean").value()[0];
  CHECK(g.SetLoss(loss).ok());
  auto grads = AppendBackwardOfLoss(&g).value();
  OptimizerConf conf;
  conf.lr = 0.1;
  conf.momentum = 0.9;
  CHECK(AppendOptimizer(&g, conf, grads).ok());
  return g;
}

Tensor Batch(int64_t i) {
  return MakeTensor({8, 6}, [&](int64_t k) { return std::cos(0.3 * k + i) * 1.5; });
}

constexpr int kIterations = 4;

// The loss of each iteration by hand: mean(y) over 8 x 3 elements.
std::vector<float> ReferenceLosses(const OpGraph& g) {
  MlpReference ref(6, 5, 3, g.variable("w1").init, g.variable("w2").init);
  std::vector<float> losses;
  for (int i = 0; i < kIterations; ++i) {
    const std::vector<double> y = ref.Step(Batch(i), 1.0 / 24, 0.1, 0.9);
    double sum = 0;
    for (double v : y) sum += v;
    losses.push_back(static_cast<float>(sum / 24));
  }
  return losses;
}

// Each rank's part of a source or variable: the block its register holds.
Tensor Part(const proto::RegisterDesc& r, const Tensor& logical) {
  Shape local(std::vector<int64_t>(r.desc().shape().dims().begin(), r.desc().shape().dims().end()));
  Tensor part(local, logical.dtype());
  CopyBox(logical, {r.logical_offset().begin(), r.logical_offset().end()}, &part,
          std::vector<int64_t>(local.ndim(), 0), local);
  return part;
}

std::vector<float> DistributedLosses(const OpGraph& g, const Strategy& s, int64_t slots,
                                     int64_t bucket_bytes = 0) {
  LoweringOptions lowering;
  lowering.num_slots = slots;
  lowering.gradient_bucket_bytes = bucket_bytes;
  const proto::Plan plan = LowerDistributed(g, s, {g.loss()}, lowering).value();
  std::unique_ptr<BoxingGroups> owned = BoxingGroups::Create(plan, milliseconds(10000)).value();
  BoxingGroups& groups = *owned;
  RuntimeOptions options;
  options.timeout = milliseconds(20000);
  options.boxing = [&](const proto::TaskProto& t, const Tensor& in, Tensor* out,
                       const BoxingStream& on) {
    return RunBoxingStep(t, in, out, groups.For(t.boxing_conf().group_id(), t.rank()), on);
  };
  auto rt = Runtime::Create(plan, options);
  EXPECT_TRUE(rt.ok()) << rt.status().message();
  if (!rt.ok()) return {};
  std::vector<TensorMap> feeds(kIterations);
  for (const proto::TaskProto& t : plan.tasks()) {
    const proto::RegisterDesc& r = plan.registers(t.outputs_size() > 0 ? t.outputs(0) : 0);
    const TensorKey key{t.op_conf().name(), t.rank()};
    if (t.kind() == proto::TaskProto::VARIABLE) {
      CHECK(rt.value()->SetVariable(key.name, key.rank, Part(r, g.variable(key.name).init)).ok());
    } else if (t.kind() == proto::TaskProto::SOURCE) {
      for (int i = 0; i < kIterations; ++i) feeds[i][key] = Part(r, Batch(i));
    }
  }
  auto result = rt.value()->Run(kIterations, feeds, {g.loss()});
  EXPECT_TRUE(result.ok()) << result.status().message();
  if (!result.ok()) return {};
  // The scalar loss: summed over P axes, taken once along B axes.
  const NdSbp sbp = s.ProducedSbp(g, g.loss()).value();
  const Placement& p = s.placement();
  std::vector<float> losses;
  for (int i = 0; i < kIterations; ++i) {
    float sum = 0;
    for (int64_t k = 0; k < p.size(); ++k) {
      const std::vector<int64_t> coords = p.Coordinates(k);
      bool duplicate = false;
      for (int64_t a = 0; a < sbp.size(); ++a) duplicate |= !sbp[a].is_partial_sum() && coords[a];
      if (!duplicate)
        sum += result.value().fetched[i].at({g.loss(), p.ranks()[k]}).data<float>()[0];
    }
    losses.push_back(sum);
  }
  return losses;
}

void ExpectLossesClose(const std::vector<float>& got, const std::vector<float>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5) << "iteration " << i;
}

TEST(DistributedRunTest, DataParallelOnTwoRanksEqualsTheReference) {
  const OpGraph g = MlpGraph();
  const std::vector<float> want = ReferenceLosses(g);
  Placement p = Placement::Create(DeviceType::kCPU, {0, 1}).value();
  Strategy s = DeduceStrategy(g, p, {{"x", NdSbp::Parse("S(0)").value()}}).value();
  for (int64_t slots : {1, 2}) ExpectLossesClose(DistributedLosses(g, s, slots), want);
}

// Distinct all-reduce instances (group ids) of a plan.
size_t AllReduces(const proto::Plan& plan) {
  std::set<int64_t> groups;
  for (const proto::TaskProto& t : plan.tasks()) {
    if (t.kind() == proto::TaskProto::BOXING &&
        t.boxing_conf().kind() == proto::BoxingConf::ALL_REDUCE) {
      groups.insert(t.boxing_conf().group_id());
    }
  }
  return groups.size();
}

TEST(DistributedRunTest, BucketedGradientsEqualTheReference) {
  // w1's and w2's gradients (30 and 15 floats) in one bucket of 1 KiB: one
  // all-reduce of 45 floats instead of two per group; the losses still equal the
  // plain-loop reference's, on [2] and [2, 2], with 1 and 2 slots.
  const OpGraph g = MlpGraph();
  const std::vector<float> want = ReferenceLosses(g);
  for (const Shape& mesh : {Shape{2}, Shape{2, 2}}) {
    const std::vector<int64_t> ranks =
        mesh.ndim() == 1 ? std::vector<int64_t>{0, 1} : std::vector<int64_t>{0, 1, 2, 3};
    Placement p = Placement::Create(DeviceType::kCPU, ranks, mesh).value();
    const std::string x = mesh.ndim() == 1 ? "S(0)" : "(S(0), S(0))";
    Strategy s = DeduceStrategy(g, p, {{"x", NdSbp::Parse(x).value()}}).value();
    LoweringOptions plain, bucketed;
    bucketed.gradient_bucket_bytes = 1024;
    const size_t before = AllReduces(LowerDistributed(g, s, {g.loss()}, plain).value());
    const size_t after = AllReduces(LowerDistributed(g, s, {g.loss()}, bucketed).value());
    // Only the two gradients are all-reduced (one instance per group of
    // each axis: 1 on [2], 4 on [2, 2]); fused, half as many instances.
    EXPECT_EQ(2 * after, before) << mesh;
    for (int64_t slots : {1, 2}) {
      SCOPED_TRACE(mesh.ToString() + " slots " + std::to_string(slots));
      ExpectLossesClose(DistributedLosses(g, s, slots, 1024), want);
    }
  }
}

TEST(DistributedRunTest, SingleDeviceLoweringOnOneRankEqualsTheReference) {
  const OpGraph g = MlpGraph();
  LoweringOptions one_slot;
  one_slot.num_slots = 1;
  const Placement device = Placement::Create(DeviceType::kCPU, {0}).value();
  const proto::Plan plan =
      LowerDistributed(g, ReplicatedStrategy(g, device).value(), {}, one_slot).value();
  // Its tasks: a SOURCE per input, a VARIABLE per variable, then a COMPUTE
  // per op in graph order, all on rank 0's stream 0; no boxing, sink or ACC.
  std::vector<std::pair<int, std::string>> want, got;
  for (const std::string& in : g.input_names()) want.emplace_back(proto::TaskProto::SOURCE, in);
  for (const std::string& v : g.variable_names()) {
    want.emplace_back(proto::TaskProto::VARIABLE, v);
  }
  for (const OpNode& op : g.ops()) want.emplace_back(proto::TaskProto::COMPUTE, op.name);
  for (const proto::TaskProto& t : plan.tasks()) {
    got.emplace_back(t.kind(), t.op_conf().name());
    EXPECT_EQ(t.rank(), 0);
    EXPECT_EQ(t.stream(), 0);
  }
  EXPECT_EQ(got, want);
  for (const proto::RegisterDesc& r : plan.registers()) EXPECT_EQ(r.num_slots(), 1) << r.name();
  RuntimeOptions options;
  options.timeout = milliseconds(20000);
  auto rt = Runtime::Create(plan, options);
  ASSERT_TRUE(rt.ok()) << rt.status().message();
  for (const std::string& v : g.variable_names()) {
    ASSERT_TRUE(rt.value()->SetVariable(v, 0, g.variable(v).init).ok());
  }
  std::vector<TensorMap> feeds(kIterations);
  for (int i = 0; i < kIterations; ++i) feeds[i][{"x", 0}] = Batch(i);
  auto result = rt.value()->Run(kIterations, feeds, {g.loss()});
  ASSERT_TRUE(result.ok()) << result.status().message();
  std::vector<float> losses;
  for (int i = 0; i < kIterations; ++i) {
    losses.push_back(result.value().fetched[i].at({g.loss(), 0}).data<float>()[0]);
  }
  ExpectLossesClose(losses, ReferenceLosses(g));
}

TEST(DistributedRunTest, RandomStrategiesOnTwoByTwoEqualTheReference) {
  const OpGraph g = MlpGraph();
  const std::vector<float> want = ReferenceLosses(g);
  Placement p = Placement::Create(DeviceType::kCPU, {0, 1, 2, 3}, Shape({2, 2})).value();
  for (uint64_t seed : {1, 2, 3}) {
    Strategy s = RandomStrategy(g, p, seed).value();
    SCOPED_TRACE(s.ToString(g));
    ExpectLossesClose(DistributedLosses(g, s, 2), want);
  }
}

}  // namespace
}  // namespace ofl
