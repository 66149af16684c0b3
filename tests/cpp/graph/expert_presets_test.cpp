// Expert presets (graph/expert_presets.h), source presets: the source
// layouts each rule gives on real small models, the split axis read from
// matmul's transpose_b, the errors of presets that do not apply, valid
// strategies from each, and BestExpertPreset picking the cheapest
// rule-based preset. The rule-based presets' signatures: expert_rules_test.cpp.
// GCC 12 at -O3 reports -Wmaybe-uninitialized inside std::map's destructor
// of the default-argument temporary options (CostOptions::input_arrival) that
// these tests' calls create: a false positive of its inliner, not a bug.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include "graph/expert_presets.h"

#include <gtest/gtest.h>

#include "model_makers.h"

namespace ofl {
namespace {

using testing::Mesh;
using testing::TwoLevelCluster;

NdSbp Sbp1(const std::string& text) { return NdSbp::Parse(text).value(); }

TEST(ExpertPresetsTest, DataParallelSplitsDataAndBroadcastsWeights) {
  const OpGraph g = testing::LinearModel(64, 32, 16);
  auto s = ExpertPresetSources("data_parallel", g, Mesh({2, 2})).value();
  EXPECT_EQ(s.at("x"), Sbp1("(S(0), S(0))"));
  EXPECT_EQ(s.at("w"), Sbp1("(B, B)"));
  EXPECT_EQ(s.at("w/momentum"), Sbp1("(B, B)"));
}

TEST(ExpertPresetsTest, MegatronReadsTheSplitAxisFromTransposeB) {
  for (bool transpose_b : {false, true}) {
    SCOPED_TRACE(transpose_b ? "[out, in] weights" : "[in, out] weights");
    const OpGraph g = testing::TransformerModel(2, 2, 8, 16, 2, transpose_b);
    auto s = ExpertPresetSources("megatron", g, Mesh({4})).value();
    const std::string out_axis = transpose_b ? "(S(0))" : "(S(1))";
    const std::string in_axis = transpose_b ? "(S(1))" : "(S(0))";
    for (const std::string p : {"h.0", "h.1"}) {
      EXPECT_EQ(s.at(p + ".attn.qkv.weight"), Sbp1(out_axis));
      EXPECT_EQ(s.at(p + ".attn.qkv.bias"), Sbp1("(S(0))"));
      EXPECT_EQ(s.at(p + ".mlp.fc.weight"), Sbp1(out_axis));
      EXPECT_EQ(s.at(p + ".mlp.fc.bias"), Sbp1("(S(0))"));
      EXPECT_EQ(s.at(p + ".attn.proj.weight"), Sbp1(in_axis));
      EXPECT_EQ(s.at(p + ".attn.proj.bias"), Sbp1("(B)"));
      EXPECT_EQ(s.at(p + ".mlp.proj.weight"), Sbp1(in_axis));
      EXPECT_EQ(s.at(p + ".ln1.weight"), Sbp1("(B)"));
      // Adam moments follow their parameter; the step counter is B.
      EXPECT_EQ(s.at(p + ".mlp.fc.weight/m"), Sbp1(out_axis));
      EXPECT_EQ(s.at(p + ".mlp.fc.weight/step"), Sbp1("(B)"));
    }
    EXPECT_EQ(s.at("x"), Sbp1("(B)"));
    EXPECT_EQ(s.at("causal_mask"), Sbp1("(B)"));
  }
}

TEST(ExpertPresetsTest, TwoDimensionalIsDataOuterTensorInner) {
  const OpGraph g = testing::TransformerModel(1, 2, 8, 16, 2);
  auto s = ExpertPresetSources("2d", g, Mesh({2, 2})).value();
  EXPECT_EQ(s.at("x"), Sbp1("(S(0), B)"));
  EXPECT_EQ(s.at("h.0.attn.qkv.weight"),
            Sbp1("(B, S(0))"));                               // [out, in]: output features
  EXPECT_EQ(s.at("h.0.mlp.proj.weight"), Sbp1("(B, S(1))"));  // input features
  EXPECT_EQ(s.at("h.0.ln2.bias"), Sbp1("(B, B)"));
}

TEST(ExpertPresetsTest, VggSplitsTheClassifierOnly) {
  const OpGraph g = testing::ConvNetModel(8, 4, 6, 10);
  auto s = ExpertPresetSources("vgg", g, Mesh({4})).value();
  EXPECT_EQ(s.at("images"), Sbp1("(S(0))"));
  EXPECT_EQ(s.at("conv1.weight"), Sbp1("(B)"));
  EXPECT_EQ(s.at("fc.weight"), Sbp1("(S(1))"));
  EXPECT_EQ(s.at("fc.bias"), Sbp1("(S(0))"));
}

TEST(ExpertPresetsTest, PresetsThatDoNotApplySayWhy) {
  const OpGraph linear = testing::LinearModel(64, 32, 16);
  auto megatron = ExpertPresetSources("megatron_sources", linear, Mesh({4}));
  ASSERT_FALSE(megatron.ok());
  EXPECT_NE(megatron.status().message().find("no Transformer block weights"), std::string::npos);
  const OpGraph gpt = testing::TransformerModel(1, 2, 8, 16, 2);
  auto two_d = ExpertPresetSources("2d", gpt, Mesh({4}));
  ASSERT_FALSE(two_d.ok());
  EXPECT_NE(two_d.status().message().find("needs a 2-D mesh"), std::string::npos);
  auto vgg = ExpertPresetSources("vgg", gpt, Mesh({4}));
  ASSERT_FALSE(vgg.ok());
  EXPECT_NE(vgg.status().message().find("no conv2d"), std::string::npos);
  auto unknown = ExpertPresetSources("zero3", gpt, Mesh({4}));
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("data_parallel, megatron, 2d, zero, vgg, "
                                            "data_parallel_sources, megatron_sources"),
            std::string::npos);
}

TEST(ExpertPresetsTest, PlannedPresetsAreValidAndKeepTheirSources) {
  const OpGraph g = testing::TransformerModel(2, 2, 8, 16, 2);
  const Placement mesh = Mesh({2, 2});
  auto model = BuildCostModel(g, Strategy(mesh), TwoLevelCluster()).value();
  for (const std::string name : {"data_parallel_sources", "megatron_sources", "2d_sources"}) {
    SCOPED_TRACE(name);
    PlanOptions o;
    o.searcher = name;
    auto planned = PlanWithModel(g, model, o);
    ASSERT_TRUE(planned.ok()) << planned.status().message();
    ASSERT_TRUE(planned.value().strategy.Validate(g).ok());
    const auto sources = ExpertPresetSources(name, g, mesh).value();
    for (const auto& [tensor, sbp] : sources) {
      EXPECT_EQ(planned.value().strategy.sources().at(tensor), sbp) << tensor;
    }
  }
  std::vector<std::string> tried;
  auto best = BestExpertPreset(g, model, {}, &tried);
  ASSERT_TRUE(best.ok()) << best.status().message();
  ASSERT_EQ(tried.size(), 5u);  // the rule-based presets
  EXPECT_NE(tried[4].find("vgg: expert preset vgg: the graph has no conv2d op"), std::string::npos);
  for (const std::string name : {"data_parallel", "megatron", "2d", "zero"}) {
    PlanOptions o;
    o.searcher = name;
    EXPECT_LE(best.value().solution.total_seconds,
              PlanWithModel(g, model, o).value().solution.total_seconds);
  }
}

}  // namespace
}  // namespace ofl
