// ExactOptions::time_budget_seconds: branch and bound stops unproved once
// the budget is spent (checked every 4096 nodes), and says why.
#include <gtest/gtest.h>

#include <random>

#include "search/exact.h"
#include "tests/cpp/search/graph_makers.h"

namespace ofl {
namespace {

// A 14-node clique with 6 candidates each: too wide to eliminate under a
// 4-entry table cap, and more than 4096 branch-and-bound nodes to search.
CostGraph Clique() {
  std::mt19937_64 rng(7);
  CostGraph g;
  for (int i = 0; i < 14; ++i) {
    std::vector<Candidate> c;
    for (int k = 0; k < 6; ++k) c.push_back({testing::Uniform(rng, 0, 10), 0});
    EXPECT_TRUE(g.AddNode("n" + std::to_string(i), c).ok());
  }
  for (int a = 0; a < 14; ++a) {
    for (int b = a + 1; b < 14; ++b) {
      EXPECT_TRUE(g.AddEdge(a, b, testing::RandomMatrix(rng, 6, 6)).ok());
    }
  }
  return g;
}

TEST(ExactTimeBudget, StopsUnprovedAndSaysWhy) {
  CostGraph g = Clique();
  ExactOptions options;
  options.max_table_entries = 4;
  options.prune_dominated = false;
  ExactResult free_run = ExactSearch(g, options).value();
  ASSERT_GT(free_run.branch_nodes, 4096) << "the instance is too easy to test the budget";
  options.time_budget_seconds = 1e-12;
  ExactResult cut = ExactSearch(g, options).value();
  EXPECT_FALSE(cut.proved_optimal);
  EXPECT_EQ(cut.branch_nodes, 4096);
  EXPECT_NE(cut.note.find("time_budget_seconds"), std::string::npos) << cut.note;
  // Never better than the best answer the free run found or proved.
  EXPECT_GE(cut.solution.total_seconds, free_run.lower_bound - 1e-9);
}

}  // namespace
}  // namespace ofl
