// Strategy: deduction from pinned tensors, random valid strategies, and the
// errors a bad strategy gives.
#include "graph/strategy.h"

#include <gtest/gtest.h>

#include "graph/autodiff.h"
#include "graph/optimizer_pass.h"
#include "model_makers.h"

namespace ofl {
namespace {

NdSbp Nd(const std::string& text) { return NdSbp::Parse(text).value(); }

TEST(StrategyTest, DataParallelIsDeducedFromASplitBatch) {
  OpGraph g = testing::TinyTrainGraph();
  Placement p = Placement::Create(DeviceType::kCPU, {0, 1}).value();
  Strategy s = DeduceStrategy(g, p, {{"x", Nd("S(0)")}}).value();
  EXPECT_EQ(s.signature("fc").ToString(), "(S(0)), (B) -> (S(0))");
  EXPECT_EQ(s.sources().at("w"), Nd("B"));
  EXPECT_EQ(s.sources().at("w/momentum"), Nd("B"));
  // The weight gradient contracts the split batch: a partial sum.
  std::string wgrad;
  for (const OpNode& n : g.ops()) {
    if (n.type == "sgd_update") wgrad = n.inputs[1];
  }
  EXPECT_EQ(s.ProducedSbp(g, wgrad).value(), Nd("P"));
  EXPECT_EQ(s.signature("update/w").ToString(), "(B), (B), (B) -> ");
  EXPECT_TRUE(s.Validate(g).ok());
}

TEST(StrategyTest, RandomStrategiesAreValidAndSeeded) {
  OpGraph g = testing::TinyTrainGraph();
  Placement p = Placement::Create(DeviceType::kCPU, {0, 1, 2, 3}, Shape{2, 2}).value();
  for (uint64_t seed = 0; seed < 20; ++seed) {
    Strategy a = RandomStrategy(g, p, seed).value();
    EXPECT_TRUE(a.Validate(g).ok());
    EXPECT_EQ(a.ToString(g), RandomStrategy(g, p, seed).value().ToString(g));
  }
}

TEST(StrategyTest, BadStrategiesAreRejectedByName) {
  OpGraph g = testing::TinyTrainGraph();
  Placement p = Placement::Create(DeviceType::kCPU, {0, 1}).value();
  Strategy s = DeduceStrategy(g, p).value();
  s.SetSignature("fc", NdSbpSignature::Parse("(S(1)), (S(1)) -> (S(0))").value());
  Status lacks = s.Validate(g);
  ASSERT_FALSE(lacks.ok());
  EXPECT_EQ(
      lacks.message(),
      "strategy: op 'fc' (matmul) has no signature (S(1)), (S(1)) -> (S(0)) on hierarchy (2)");

  Strategy wrong_len = DeduceStrategy(g, p).value();
  wrong_len.SetSourceSbp("x", Nd("(S(0), B)"));
  Status len = wrong_len.Validate(g);
  ASSERT_FALSE(len.ok());
  EXPECT_EQ(len.message(), "tensor 'x': NdSbp (S(0), B) has 2 axes but the hierarchy (2) has 1");

  auto pinned_bad = DeduceStrategy(g, p, {{"x", Nd("S(2)")}});
  ASSERT_FALSE(pinned_bad.ok());
  EXPECT_EQ(pinned_bad.status().message(),
            "tensor 'x': S(2) splits an axis the shape (8, 4) does not have");

  Strategy in_place = DeduceStrategy(g, p).value();
  in_place.SetSourceSbp("w", Nd("S(0)"));
  in_place.SetSourceSbp("w/momentum", Nd("S(0)"));
  Status mismatch = in_place.Validate(g);
  ASSERT_FALSE(mismatch.ok());
  EXPECT_EQ(mismatch.message(),
            "strategy: op 'update/w' writes variable 'w' in place as (B) but the variable is "
            "laid out as (S(0))");
}

}  // namespace
}  // namespace ofl
