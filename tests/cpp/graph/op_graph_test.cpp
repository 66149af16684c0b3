// OpGraph validation, Job round trip, autodiff fan-out and the optimizer
// pass, on the ops the graph module itself relies on (add_n, sgd_update).
#include "graph/op_graph.h"

#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include "graph/autodiff.h"
#include "graph/distributed_lowering.h"
#include "graph/optimizer_pass.h"
#include "graph/strategy.h"
#include "runtime/runtime.h"

namespace ofl {
namespace {

// What a one-device Session runs: every tensor whole on cpu rank 0, one slot
// per register.
Maybe<proto::Plan> OneDevicePlan(const OpGraph& g) {
  OFL_ASSIGN_OR_RETURN(Placement device, Placement::Create(DeviceType::kCPU, {0}));
  OFL_ASSIGN_OR_RETURN(Strategy strategy, ReplicatedStrategy(g, device));
  LoweringOptions options;
  options.num_slots = 1;
  return LowerDistributed(g, strategy, {}, options);
}

TEST(OpGraphTest, RejectsBadOpsAndChangesNothing) {
  OpGraph g;
  ASSERT_TRUE(g.AddInput("x", {{2, 3}, DataType::kFloat32}).ok());
  auto unknown_input = g.AddOp("add_n", {"x", "nope"}, {});
  ASSERT_FALSE(unknown_input.ok());
  EXPECT_EQ(unknown_input.status().message(),
            "add_n: input inputs[1] names an unknown tensor 'nope'");
  auto unknown_op = g.AddOp("no_such_op", {"x"}, {});
  ASSERT_FALSE(unknown_op.ok());
  EXPECT_EQ(unknown_op.status().message(), "unknown op 'no_such_op'");
  auto bad_attr = g.AddOp("add_n", {"x"}, {{"alpha", 1.0}}, "sum");
  ASSERT_FALSE(bad_attr.ok());
  EXPECT_EQ(bad_attr.status().message(), "add_n 'sum': unknown attribute 'alpha'");
  EXPECT_TRUE(g.ops().empty());
  EXPECT_FALSE(g.AddInput("x", {{1}, DataType::kFloat32}).ok());  // duplicate name
  ASSERT_TRUE(g.AddOp("add_n", {"x", "x"}, {}, "sum").ok());
  auto dup = g.AddOp("add_n", {"x"}, {}, "sum");
  ASSERT_FALSE(dup.ok());
  EXPECT_EQ(dup.status().message(), "add_n 'sum': op name 'sum' is already used");
  EXPECT_EQ(g.ops().size(), 1u);
}

TEST(OpGraphTest, MutableInputMustBeAVariable) {
  OpGraph g;
  ASSERT_TRUE(g.AddInput("p", {{3}, DataType::kFloat32}).ok());
  ASSERT_TRUE(g.AddVariable("buf", Tensor::Full({3}, DataType::kFloat32, 0), false).ok());
  auto r = g.AddOp("sgd_update", {"p", "p", "buf"}, {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "sgd_update: input param is written in place and must be a variable, got 'p'");
}

TEST(OpGraphTest, RefusesAnOpWhoseOutputNameIsTaken) {
  // Found by fuzz/fuzz_job.cpp: this was a CHECK (abort) in AddOp.
  OpGraph g;
  ASSERT_TRUE(g.AddInput("x", {{2}, DataType::kFloat32}).ok());
  ASSERT_TRUE(g.AddInput("y/out_0", {{2}, DataType::kFloat32}).ok());
  const std::string before = g.ToString();
  auto r = g.AddOp("scalar_mul", {"x"}, {{"value", 2.0}}, "y");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("output tensor 'y/out_0' already exists in the graph"),
            std::string::npos)
      << r.status().message();
  EXPECT_EQ(g.ToString(), before);
}

TEST(OpGraphTest, NamesAnExtraInputThatIsUnknown) {
  // Found by fuzz/fuzz_job.cpp: ArgName threw std::out_of_range (abort).
  OpGraph g;
  ASSERT_TRUE(g.AddInput("x", {{2}, DataType::kFloat32}).ok());
  auto r = g.AddOp("scalar_mul", {"x", "nope"}, {{"value", 2.0}}, "y");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "scalar_mul 'y': input #1 (the op takes 1) names an unknown tensor 'nope'");
}

TEST(OpGraphTest, JobRoundTrips) {
  OpGraph g;
  ASSERT_TRUE(g.AddInput("x", {{2, 3}, DataType::kFloat32}).ok());
  ASSERT_TRUE(g.AddVariable("w", Tensor::Full({2, 3}, DataType::kFloat32, 1), true).ok());
  ASSERT_TRUE(g.AddOp("add_n", {"x", "w"}, {}, "sum").ok());
  OpGraph back = OpGraph::FromJob(g.ToJob()).value();
  EXPECT_EQ(back.ToString(), g.ToString());
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(back.ToJob(), g.ToJob()));
}

TEST(AutodiffTest, AccumulatesFanOutAndSkipsNonTrainable) {
  // z = add_n(w, w, c) with w trainable and c a constant: dz/dw = 2 * seed.
  OpGraph g;
  ASSERT_TRUE(g.AddVariable("w", Tensor::Full({4}, DataType::kFloat32, 1), true).ok());
  ASSERT_TRUE(g.AddVariable("c", Tensor::Full({4}, DataType::kFloat32, 1), false).ok());
  ASSERT_TRUE(g.AddInput("seed", {{4}, DataType::kFloat32}).ok());
  std::string z = g.AddOp("add_n", {"w", "w", "c"}, {}).value()[0];
  auto grads = AppendBackward(&g, {{z, "seed"}}).value();
  ASSERT_EQ(grads.size(), 1u);
  ASSERT_EQ(grads.count("w"), 1u);

  auto rt = Runtime::Create(OneDevicePlan(g).value()).value();
  ASSERT_TRUE(rt->SetVariable("w", 0, Tensor::Full({4}, DataType::kFloat32, 1)).ok());
  Tensor seed({4}, DataType::kFloat32);
  for (int i = 0; i < 4; ++i) seed.data<float>()[i] = static_cast<float>(i) - 1.5f;
  auto out = rt->Run(1, {{{{"seed", 0}, seed}}}, {grads["w"]});
  ASSERT_TRUE(out.ok()) << out.status().message();
  const Tensor& dw = out.value().fetched[0].at({grads["w"], 0});
  for (int i = 0; i < 4; ++i) EXPECT_FLOAT_EQ(dw.data<float>()[i], 2.0f * (i - 1.5f));
}

TEST(AutodiffTest, LossMustBeAScalar) {
  OpGraph g;
  ASSERT_TRUE(g.AddVariable("w", Tensor::Full({4}, DataType::kFloat32, 1), true).ok());
  Status s = g.SetLoss("w");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "loss 'w' must be a floating scalar, got shape (4) float32");
}

TEST(OptimizerPassTest, SgdStepsTheParameter) {
  // loss = add_n(w) with w of one element: grad 1; SGD lr 0.5: w 3 -> 2.5 -> 2.
  OpGraph g;
  ASSERT_TRUE(g.AddVariable("w", Tensor::Full({1}, DataType::kFloat32, 3), true).ok());
  std::string loss = g.AddOp("add_n", {"w"}, {}).value()[0];
  ASSERT_TRUE(g.SetLoss(loss).ok());
  auto grads = AppendBackwardOfLoss(&g).value();
  OptimizerConf conf;
  conf.lr = 0.5;
  ASSERT_TRUE(AppendOptimizer(&g, conf, grads).ok());
  EXPECT_TRUE(g.IsVariable("w/momentum"));
  // The one-device plan orders the update after the loss's read of w.
  auto rt = Runtime::Create(OneDevicePlan(g).value());
  ASSERT_TRUE(rt.ok()) << rt.status().message();
  ASSERT_TRUE(rt.value()->SetVariable("w", 0, Tensor::Full({1}, DataType::kFloat32, 3)).ok());
  ASSERT_TRUE(rt.value()->Run(1, {}, {}).ok());
  ASSERT_TRUE(rt.value()->Run(1, {}, {}).ok());
  EXPECT_FLOAT_EQ(rt.value()->GetVariable("w", 0).value().data<float>()[0], 2.0f);
  conf.kind = "lamb";
  Status bad = AppendOptimizer(&g, conf, grads);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.message(), "optimizer: unknown kind 'lamb' (expected sgd, adam or adamw)");
}

}  // namespace
}  // namespace ofl
