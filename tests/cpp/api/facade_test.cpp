// The binding's door to graph/, search/ and ops/ (api/planning.h,
// api/strategy_spec.h, api/op_tools.h): requests are checked with errors that
// name the argument and its value, the checked ones reach graph/ unchanged,
// and the op schema matches matmul's registration (ops/math/matmul.cpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "graph/searchers/autoddl_searcher.h"
#include "graph/searchers/exact_searcher.h"
#include "oneflow_lite/api/op_tools.h"
#include "oneflow_lite/api/planning.h"
#include "oneflow_lite/api/strategy_spec.h"
#include "tests/cpp/graph/model_makers.h"

namespace ofl {
namespace {

std::string ErrorOf(const PlanRequest& r) { return PlanOptionsFrom(r).status().message(); }

TEST(PlanRequest, BadValuesAreNamedErrors) {
  PlanRequest r;
  r.micro_batches = 0;
  EXPECT_EQ(ErrorOf(r), "plan: micro_batches=0 (needs >= 1)");
  r = PlanRequest{};
  r.memory_limit = 0;
  EXPECT_NE(ErrorOf(r).find("plan: memory_limit=0"), std::string::npos);
  r = PlanRequest{};
  r.exact_max_table_entries = 0;
  EXPECT_EQ(ErrorOf(r), "plan: exact_max_table_entries=0 (needs >= 1)");
  r = PlanRequest{};
  r.autoddl_random_starts = -2;
  EXPECT_EQ(ErrorOf(r), "plan: autoddl_random_starts=-2 (needs >= 0)");
  r = PlanRequest{};
  r.pinned["x"] = "S(";
  EXPECT_EQ(ErrorOf(r).rfind("pinned 'x': ", 0), 0u) << ErrorOf(r);
  r = PlanRequest{};
  r.compute_dtype = "float7";
  EXPECT_FALSE(PlanOptionsFrom(r).ok());
}

TEST(PlanRequest, CheckedValuesReachThePlanOptions) {
  PlanRequest r;
  r.searcher = "exact";
  r.pinned["x"] = "(S(0), B)";
  r.micro_batches = 4;
  r.compute_dtype = "float64";
  r.memory_limit = -1;
  r.exact_max_table_entries = 1000;
  r.autoddl_random_starts = 3;
  auto options = PlanOptionsFrom(r);
  ASSERT_TRUE(options.ok()) << options.status().message();
  EXPECT_EQ(options.value().searcher, "exact");
  EXPECT_EQ(options.value().pinned.at("x").ToString(), "(S(0), B)");
  EXPECT_EQ(options.value().cost.micro_batches, 4);
  EXPECT_EQ(options.value().cost.compute_dtype, DataType::kFloat64);
  EXPECT_EQ(options.value().cost.memory_limit_bytes, kNoMemoryLimit);
  const SearcherOptions& searchers = options.value().searcher_options;
  EXPECT_EQ(searchers.Get<ExactSearcherOptions>().exact.max_table_entries, 1000);
  EXPECT_GE(searchers.Get<ExactSearcherOptions>().exact.max_total_entries, 8000);
  EXPECT_EQ(searchers.Get<AutoddlSearcherOptions>().descent.num_random_starts, 3);
  r.memory_limit = 123;
  EXPECT_EQ(PlanOptionsFrom(r).value().cost.memory_limit_bytes, 123);
}

TEST(PlanRequest, MeshPlacementDefaultsToTheFirstRanks) {
  auto p = MeshPlacement({2, 3});
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p.value().ranks(), (std::vector<int64_t>{0, 1, 2, 3, 4, 5}));
  auto q = MeshPlacement({2}, std::vector<int64_t>{4, 7});
  ASSERT_TRUE(q.ok()) << q.status().message();
  EXPECT_EQ(q.value().ranks(), (std::vector<int64_t>{4, 7}));
}

TEST(Clusters, FoundByPresetNameElseNamedError) {
  ASSERT_FALSE(ClusterPresets().empty());
  const std::string first = ClusterPresets()[0];
  auto c = FindCluster(first);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c.value().name(), PresetCluster(first).value().name());
  auto missing = FindCluster("/no/such/cluster.pbtxt");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("'/no/such/cluster.pbtxt' is neither a preset ("),
            std::string::npos);
  EXPECT_NE(missing.status().message().find(first), std::string::npos);
}

// v100_8gpu's nvlink level (150 GB/s, 5 us per step): an all-reduce of 1 GB
// sent on 8 ranks takes 14 x 5 us + 1e9 / 150e9 s; bad arguments are named.
TEST(Clusters, CollectiveSecondsByKindNameAndLevel) {
  Cluster v100 = PresetCluster("v100_8gpu").value();
  auto s = ClusterCollectiveSeconds(v100, "all_reduce", 1e9, 8, 0);
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_NEAR(s.value(), 14 * 5e-6 + 1e9 / 150e9, 1e-15);
  EXPECT_NE(
      ClusterCollectiveSeconds(v100, "gather", 1, 2, 0).status().message().find("kind='gather'"),
      std::string::npos);
  EXPECT_NE(ClusterCollectiveSeconds(v100, "all_reduce", 1, 2, 9)
                .status()
                .message()
                .find("has no level 9"),
            std::string::npos);
  EXPECT_NE(
      ClusterCollectiveSeconds(v100, "all_reduce", -1, 2, 0).status().message().find("bytes=-1"),
      std::string::npos);
  EXPECT_NE(
      ClusterCollectiveSeconds(v100, "all_reduce", 1, 0, 0).status().message().find("group_size=0"),
      std::string::npos);
}

TEST(StrategySpec, KindsAndNamedErrors) {
  OpGraph g = testing::TinyTrainGraph();
  Placement p = testing::Mesh({2});
  StrategySpec deduce;
  deduce.pinned["x"] = "S(0)";
  auto s = MakeStrategy(g, p, deduce);
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s.value().sources().at("x").ToString(), "(S(0))");

  StrategySpec manual;
  manual.kind = "manual";
  manual.signatures["fc"] = "nonsense";
  EXPECT_EQ(MakeStrategy(g, p, manual).status().message().rfind("op 'fc': ", 0), 0u);

  StrategySpec random;
  random.kind = "random";
  random.stages = 3;
  EXPECT_EQ(MakeStrategy(g, p, random).status().message(),
            "cannot split 2 ranks into 3 equal stages");
  random.stages = 0;  // was taken as one stage
  EXPECT_EQ(MakeStrategy(g, p, random).status().message(),
            "strategy: random needs stages >= 1, got stages=0");

  StrategySpec unknown;
  unknown.kind = "greedy";
  EXPECT_EQ(MakeStrategy(g, p, unknown).status().message(),
            "unknown strategy kind 'greedy' (expected deduce, random or manual)");
}

TEST(OpSchema, MatchesMatmulsRegistration) {
  auto schema = DescribeOp("matmul");
  ASSERT_TRUE(schema.ok()) << schema.status().message();
  EXPECT_EQ(schema.value().inputs, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(schema.value().outputs, (std::vector<std::string>{"out"}));
  ASSERT_EQ(schema.value().attrs.size(), 2u);
  EXPECT_TRUE(schema.value().attrs.at("transpose_a").has_value());
  EXPECT_TRUE(schema.value().has_grad);
  EXPECT_TRUE(schema.value().mutable_inputs.empty());
  const auto types = OpTypes();
  EXPECT_NE(std::find(types.begin(), types.end(), "matmul"), types.end());
  EXPECT_FALSE(DescribeOp("no_such_op").ok());
}

}  // namespace
}  // namespace ofl
