// ExactOptions::time_budget_seconds: branch and bound stops unproved once
// the budget is spent (checked every 4096 nodes), and says why; so does the
// elimination (EliminationPlan::Solve with a stop).
#include <gtest/gtest.h>

#include <random>

#include "search/elimination.h"
#include "search/exact.h"
#include "tests/cpp/search/graph_makers.h"

namespace ofl {
namespace {

// A 14-node clique with 6 candidates each: too wide to eliminate under a
// 4-entry table cap, and more than 4096 branch-and-bound nodes to search.
CostGraph Clique(int n = 14) {
  std::mt19937_64 rng(7);
  CostGraph g;
  for (int i = 0; i < n; ++i) {
    std::vector<Candidate> c;
    for (int k = 0; k < 6; ++k) c.push_back({testing::Uniform(rng, 0, 10), 0});
    EXPECT_TRUE(g.AddNode("n" + std::to_string(i), c).ok());
  }
  for (int a = 0; a < n; ++a) {
    for (int b = a + 1; b < n; ++b) {
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

// The elimination heeds the budget as well: its solve stops between
// eliminations (and inside large tables), so a graph it would prove is left
// unproved, saying why, instead of running past the cap.
TEST(ExactTimeBudget, StopsTheEliminationToo) {
  CostGraph g = Clique(8);  // tables of 6^7 entries: elimination proves it
  ExactOptions options;
  ExactResult free_run = ExactSearch(g, options).value();
  ASSERT_TRUE(free_run.proved_optimal);
  EXPECT_EQ(free_run.method, "elimination");
  options.time_budget_seconds = 1e-12;
  options.max_branch_nodes = 1;  // nor may branch and bound prove it afterwards
  ExactResult cut = ExactSearch(g, options).value();
  EXPECT_FALSE(cut.proved_optimal);
  EXPECT_NE(cut.note.find("elimination stopped at the time budget"), std::string::npos) << cut.note;
  EXPECT_GE(cut.solution.total_seconds, free_run.solution.total_seconds - 1e-9);
  EXPECT_LE(cut.lower_bound, free_run.solution.total_seconds + 1e-9);
}

TEST(EliminationStop, EmptyWhenToldToStopAndEqualOtherwise) {
  CostGraph g = testing::Ladder(12, 5, 9);
  EliminationPlan plan = EliminationPlan::Make(g, {}, 1 << 20, 1 << 24).value();
  double plain = 0, never = 0, stopped = -1;
  const std::vector<int> x = plan.Solve(0, &plain);
  EXPECT_EQ(plan.Solve(0, &never, [] { return false; }), x);
  EXPECT_EQ(never, plain);
  int calls = 0;
  EXPECT_TRUE(plan.Solve(0, &stopped, [&calls] { return ++calls > 3; }).empty());
  EXPECT_EQ(calls, 4);     // asked before each elimination until it said stop
  EXPECT_EQ(stopped, -1);  // the objective is left alone
}

}  // namespace
}  // namespace ofl
