// Cost model at scale: identical layers share edge matrices, so the number
// of distinct matrices and boxing plans does not grow with depth; the
// DISABLED_ test prints the build and search seconds of the 96-layer GPT
// (hidden 4096) on h100_8gpu meshes for graph/README.md
// (--gtest_also_run_disabled_tests --gtest_filter='CostModelScaleTest.*').
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "graph/auto_parallel.h"
#include "graph/searchers/autoddl_searcher.h"
#include "model_makers.h"

namespace ofl {
namespace {

using testing::Mesh;

CostOptions Bench(int64_t micro_batches) {
  CostOptions o;
  o.micro_batches = micro_batches;
  o.compute_dtype = DataType::kBFloat16;
  o.bytes_per_parameter = 16;
  return o;
}

TEST(CostModelScaleTest, DistinctMatricesDoNotGrowWithDepth) {
  const Cluster h100 = Cluster::Preset("h100_8gpu").value();
  auto four = BuildCostModel(testing::TransformerModel(4, 2, 64, 256, 4), Strategy(Mesh({2, 4})),
                             h100, Bench(4))
                  .value();
  auto eight = BuildCostModel(testing::TransformerModel(8, 2, 64, 256, 4), Strategy(Mesh({2, 4})),
                              h100, Bench(4))
                   .value();
  EXPECT_GT(eight->graph().num_edges(), 2 * four->graph().num_edges() - 100);
  EXPECT_EQ(eight->stats().distinct_matrices, four->stats().distinct_matrices);
  EXPECT_EQ(eight->stats().boxing_plans, four->stats().boxing_plans);
}

TEST(CostModelScaleTest, DISABLED_Gpt96LayersBuildAndSearchSeconds) {
  const Cluster h100 = Cluster::Preset("h100_8gpu").value();
  auto t0 = std::chrono::steady_clock::now();
  const OpGraph g = testing::TransformerModel(96, 8, 2048, 4096, 32);
  const double graph_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("gpt 96 layers: %zu ops, OpGraph built in %.2f s\n", g.ops().size(), graph_s);
  // OFL_SCALE_MESHES=N picks the first N of [8], [2, 8], [16, 8], [128, 8].
  std::vector<std::vector<int64_t>> meshes = {{8}, {2, 8}, {16, 8}, {128, 8}};
  if (const char* n = std::getenv("OFL_SCALE_MESHES")) meshes.resize(std::atoi(n));
  for (const std::vector<int64_t>& mesh : meshes) {
    PlanOptions o;
    o.cost = Bench(64);
    o.cost.memory_limit_bytes = kNoMemoryLimit;
    auto model = BuildCostModel(g, Strategy(Mesh(mesh)), h100, o.cost);
    ASSERT_TRUE(model.ok()) << model.status().message();
    const CostModelStats& st = model.value()->stats();
    auto planned = PlanWithModel(g, model.value(), o);
    ASSERT_TRUE(planned.ok()) << planned.status().message();
    auto& autoddl = o.searcher_options.Mutable<AutoddlSearcherOptions>();
    autoddl.starts_from_presets = false;
    autoddl.starts_from_submeshes = false;
    auto plain = PlanWithModel(g, model.value(), o);
    ASSERT_TRUE(plain.ok()) << plain.status().message();
    std::printf(
        "mesh %s: nodes %d edges %d mean K %.1f; build %.3f s (%lld boxing plans, %lld "
        "matrices); autoddl %.3f s with extra starts (kept %s), %.3f s without; step %.4g s\n",
        Shape(mesh).ToString().c_str(), model.value()->graph().num_nodes(),
        model.value()->graph().num_edges(), planned.value().stats.mean_candidates, st.build_seconds,
        static_cast<long long>(st.boxing_plans), static_cast<long long>(st.distinct_matrices),
        planned.value().stats.search_seconds, planned.value().stats.autoddl_start.c_str(),
        plain.value().stats.search_seconds, planned.value().solution.total_seconds);
  }
}

}  // namespace
}  // namespace ofl
