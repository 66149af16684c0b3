// StrategyToDot and the optimizer pass's clipping and fed lr: the DOT has a
// node per source and op and marks boxings; the pass adds the clip ops and
// feeds the lr to every update (values are checked in Python against numpy:
// tests/python/test_graph_optimizer.py).
#include "graph/strategy_dot.h"

#include <gtest/gtest.h>

#include "graph/autodiff.h"
#include "graph/optimizer_pass.h"
#include "graph/strategy.h"
#include "model_makers.h"

namespace ofl {
namespace {

const OpNode* Find(const OpGraph& g, const std::string& name) {
  for (const OpNode& n : g.ops()) {
    if (n.name == name) return &n;
  }
  return nullptr;
}

TEST(StrategyDotTest, NodesEdgesAndBoxings) {
  OpGraph g = testing::TinyTrainGraph(OptimizerConf{});
  Placement p = Placement::Create(DeviceType::kCPU, {0, 1}).value();
  Strategy s = DeduceStrategy(g, p, {{"x", NdSbp::Parse("S(0)").value()}}).value();
  std::string dot = StrategyToDot(g, s);
  EXPECT_EQ(dot.rfind("digraph strategy {", 0), 0u);
  EXPECT_NE(dot.find("\"src:x\" [shape=ellipse, label=\"x\\n(S(0))\"]"), std::string::npos);
  for (const OpNode& n : g.ops()) EXPECT_NE(dot.find("\"op:" + n.name + "\""), std::string::npos);
  // The weight gradient is a partial sum; the update wants it broadcast.
  EXPECT_NE(dot.find("boxing (P) -> (B)"), std::string::npos) << dot;
  EXPECT_NE(dot.find("\"src:x\" -> \"op:fc\" [label=\"(S(0))\"]"), std::string::npos) << dot;
}

TEST(OptimizerPassTest, ClippingAndFedLearningRate) {
  OptimizerConf conf;
  conf.kind = "adamw";
  conf.clip_grad_max_norm = 1.0;
  conf.lr_input = "lr";
  OpGraph g = testing::TinyTrainGraph(conf);
  EXPECT_TRUE(g.IsInput("lr"));
  ASSERT_NE(Find(g, "clip/global_norm"), nullptr);
  EXPECT_EQ(Find(g, "clip/global_norm")->outputs[0], kGlobalNormTensor);
  const OpNode* update = Find(g, "update/w");
  ASSERT_NE(update, nullptr);
  ASSERT_EQ(update->inputs.size(), 6u);
  EXPECT_EQ(update->inputs[1], "clip/scale/w/out_0");
  EXPECT_EQ(update->inputs[5], "lr");
  conf.clip_grad_max_norm = -1;
  OpGraph bad;
  CHECK(bad.AddVariable("w", Tensor::Full({2}, DataType::kFloat32, 1.0), true).ok());
  Status s = AppendOptimizer(&bad, conf, {{"w", "w"}});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("clip_grad_max_norm=-1"), std::string::npos) << s.message();
}

TEST(OptimizerPassTest, UpdatesWithoutTheOptionalLrKeepTheirArity) {
  OpGraph g = testing::TinyTrainGraph(OptimizerConf{});
  EXPECT_EQ(Find(g, "update/w")->inputs.size(), 3u);  // sgd: param, grad, momentum
  Maybe<std::vector<std::string>> too_many =
      g.AddOp("sgd_update", {"w", "w", "w/momentum", "x", "x"}, {}, "extra");
  ASSERT_FALSE(too_many.ok());
  EXPECT_NE(too_many.status().message().find("expects 3 to 4 inputs, got 5"), std::string::npos);
}

}  // namespace
}  // namespace ofl
