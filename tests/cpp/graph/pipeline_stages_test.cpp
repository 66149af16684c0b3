// Pipeline stages (graph/strategy.h AssignStages, RandomPipelineStrategy) and
// their lowering with micro-batches (graph/distributed_lowering.h): stage of
// every forward, backward and update op and of every source; ACC tasks,
// periods, cross-stage boxing; the runtime accepts the plan.
#include <gtest/gtest.h>

#include "graph/autodiff.h"
#include "graph/distributed_lowering.h"
#include "graph/optimizer_pass.h"
#include "graph/strategy.h"
#include "runtime/runtime.h"

namespace ofl {
namespace {

// x [4, 3] @ w1 [3, 5] -> relu -> @ w2 [5, 2] -> mean -> SGD.
OpGraph TwoLayers() {
  OpGraph g;
  CHECK(g.AddInput("x", {{4, 3}, DataType::kFloat32}).ok());
  CHECK(g.AddVariable("w1", Tensor::Full({3, 5}, DataType::kFloat32, 1.0), true).ok());
  CHECK(g.AddVariable("w2", Tensor::Full({5, 2}, DataType::kFloat32, 1.0), true).ok());
  std::string h = g.AddOp("matmul", {"x", "w1"}, {}, "fc1").value()[0];
  std::string r = g.AddOp("relu", {h}, {}, "act").value()[0];
  std::string y = g.AddOp("matmul", {r, "w2"}, {}, "fc2").value()[0];
  std::string loss = g.AddOp("reduce_mean", {y}, {}, "mean").value()[0];
  CHECK(g.SetLoss(loss).ok());
  auto grads = AppendBackwardOfLoss(&g).value();
  CHECK(AppendOptimizer(&g, OptimizerConf{}, grads).ok());
  return g;
}

Placement Flat(std::vector<int64_t> ranks) {
  return Placement::Create(DeviceType::kCPU, std::move(ranks)).value();
}

TEST(PipelineStagesTest, BackwardFollowsForwardAndVariablesFollowUpdates) {
  OpGraph g = TwoLayers();
  const std::vector<Placement> stages = {Flat({0, 1}), Flat({2, 3})};
  EXPECT_EQ(NumForwardOps(g), 4);
  Strategy s(stages[0]);
  ASSERT_TRUE(AssignStages(g, stages, {2}, &s).ok());  // fc1, act | fc2, mean
  EXPECT_EQ(s.PlacementOf("fc1"), stages[0]);
  EXPECT_EQ(s.PlacementOf("act"), stages[0]);
  EXPECT_EQ(s.PlacementOf("fc2"), stages[1]);
  EXPECT_EQ(s.PlacementOf("grad/seed"), stages[1]);
  for (const OpNode& n : g.ops()) {
    if (n.name.rfind("grad/fc1/", 0) == 0) {
      EXPECT_EQ(s.PlacementOf(n.name), stages[0]) << n.name;
    }
    if (n.name.rfind("grad/fc2/", 0) == 0) {
      EXPECT_EQ(s.PlacementOf(n.name), stages[1]) << n.name;
    }
  }
  EXPECT_EQ(s.PlacementOf("update/w1"), stages[0]);
  EXPECT_EQ(s.PlacementOf("update/w2"), stages[1]);
  EXPECT_EQ(s.SourcePlacement("x"), stages[0]);
  EXPECT_EQ(s.SourcePlacement("w2"), stages[1]);
  EXPECT_EQ(s.SourcePlacement("w2/momentum"), stages[1]);
  EXPECT_EQ(s.num_ranks(), 4);
  EXPECT_FALSE(AssignStages(g, stages, {4}, &s).ok());  // no op left for stage 1
  EXPECT_FALSE(AssignStages(g, {Flat({0, 1}), Flat({1, 2})}, {2}, &s).ok());  // overlap
}

TEST(PipelineStagesTest, LoweringAccumulatesGradientsAndBoxesAcrossStages) {
  OpGraph g = TwoLayers();
  const std::vector<Placement> stages = {Flat({0, 1}), Flat({2, 3})};
  for (uint64_t seed = 0; seed < 8; ++seed) {
    Strategy s = RandomPipelineStrategy(g, stages, seed).value();
    LoweringOptions options;
    options.micro_batches = 4;
    proto::Plan plan = LowerDistributed(g, s, {g.loss()}, options).value();
    int acc = 0, send_recv = 0;
    for (const auto& t : plan.tasks()) {
      if (t.kind() == proto::TaskProto::ACC) ++acc;
      if (t.kind() == proto::TaskProto::VARIABLE) {
        EXPECT_EQ(t.period(), 4);
      }
      if (t.op_conf().op_type() == "sgd_update") {
        EXPECT_EQ(t.period(), 4);
      }
      if (t.kind() == proto::TaskProto::BOXING &&
          t.boxing_conf().kind() == proto::BoxingConf::SEND_RECV) {
        ++send_recv;
        for (int64_t r : t.outputs()) EXPECT_GE(plan.registers(r).num_slots(), 2);
      }
    }
    EXPECT_EQ(acc, 4) << "one ACC per rank of each of the two gradients (2 ranks each)";
    EXPECT_GT(send_recv, 0);
    for (const auto& t : plan.tasks()) {
      EXPECT_EQ(t.device(), "cpu:" + std::to_string(t.rank())) << t.id();
    }
    for (const auto& r : plan.registers()) {
      EXPECT_EQ(r.device(), "cpu:" + std::to_string(r.rank())) << r.name();
    }
    RuntimeOptions ro;
    ro.boxing = [](const proto::TaskProto&, const Tensor&, Tensor*, const BoxingStream&) {
      return Status::OK();
    };
    auto rt = Runtime::Create(plan, ro);
    EXPECT_TRUE(rt.ok()) << "seed " << seed << ": " << rt.status().message();
  }
}

// A CUDA placement lowers to cuda devices, which this build's runtime
// refuses by name rather than running CPU kernels on them.
TEST(PipelineStagesTest, CudaStagesLowerToCudaDevicesTheRuntimeNames) {
  OpGraph g = TwoLayers();
  auto cuda = [](std::vector<int64_t> ranks) {
    return Placement::Create(DeviceType::kCUDA, std::move(ranks)).value();
  };
  Strategy s = RandomPipelineStrategy(g, {cuda({0, 1}), cuda({2, 3})}, 0).value();
  proto::Plan plan = LowerDistributed(g, s, {g.loss()}, LoweringOptions{}).value();
  for (const auto& t : plan.tasks()) EXPECT_EQ(t.device(), "cuda:" + std::to_string(t.rank()));
  for (const auto& r : plan.registers()) EXPECT_EQ(r.device(), "cuda:" + std::to_string(r.rank()));
  RuntimeOptions ro;
  ro.boxing = [](const proto::TaskProto&, const Tensor&, Tensor*, const BoxingStream&) {
    return Status::OK();
  };
  auto rt = Runtime::Create(plan, ro);
  // A CUDA build on a machine with a GPU runs the plan; otherwise the device
  // is refused by name: the build has no backend, or the machine no GPU.
  if (rt.ok()) GTEST_SKIP() << "this build and machine run CUDA";
  const std::string message = rt.status().message();
  EXPECT_TRUE(message == "rank 0: cuda:0: this build has no cuda backend" ||
              message == "rank 0: cuda:0: no CUDA device")
      << message;
}

}  // namespace
}  // namespace ofl
