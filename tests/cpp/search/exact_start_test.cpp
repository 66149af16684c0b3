// ExactOptions::start: the caller's answer is the incumbent, so an unproved
// exact is never worse than it; it is asked for only when elimination does
// not prove the optimum; a start that picks a pruned candidate is still
// returned as given; a bad start is an error. Oracle: brute force.
#include <gtest/gtest.h>

#include <random>

#include "search/exact.h"
#include "tests/cpp/search/graph_makers.h"

namespace ofl {
namespace {

// Elimination refused (a 1-entry table cap); a budget of `branch_nodes`.
ExactOptions NoElimination(int64_t branch_nodes) {
  ExactOptions options;
  options.max_table_entries = 1;
  options.max_branch_nodes = branch_nodes;
  return options;
}

// A seeded random graph made a clique (random matrices on every pair).
CostGraph RandomClique(uint64_t seed) {
  CostGraph g =
      testing::RandomGraph(seed, testing::Shape::kCyclic, 7, 4, seed % 3 == 0, seed % 2 == 0);
  std::mt19937_64 rng(seed + 1000);
  for (int a = 0; a < g.num_nodes(); ++a) {
    for (int b = a + 1; b < g.num_nodes(); ++b) {
      EXPECT_TRUE(
          g.AddEdge(a, b, testing::RandomMatrix(rng, g.num_candidates(a), g.num_candidates(b)))
              .ok());
    }
  }
  return g;
}

ExactOptions::StartFn Returning(std::vector<int> choice, int* calls) {
  return [choice, calls]() -> Maybe<std::vector<int>> {
    ++*calls;
    return choice;
  };
}

TEST(ExactStart, NotAskedForWhenEliminationProves) {
  CostGraph g = testing::RandomGraph(3, testing::Shape::kTree, 8, 3, false, false);
  ExactOptions options;
  int calls = 0;
  options.start = Returning(std::vector<int>(8, 0), &calls);
  ExactResult r = ExactSearch(g, options).value();
  EXPECT_TRUE(r.proved_optimal);
  EXPECT_EQ(calls, 0);
  EXPECT_EQ(r.start_seconds, -1);
  EXPECT_NEAR(r.solution.total_seconds, testing::BruteForce(g).seconds, 1e-9);
}

// On seeded cliques (memory limits on half), with one branch-and-bound
// node, the answer is never worse than the start: the brute-force optimum,
// or a random feasible choice. With the full budget it is the optimum.
TEST(ExactStart, UnprovedAnswerIsNeverWorseThanTheStart) {
  for (uint64_t seed = 0; seed < 60; ++seed) {
    CostGraph g = RandomClique(seed);
    testing::BruteForceAnswer brute = testing::BruteForce(g);
    std::mt19937_64 rng(seed);
    std::vector<int> random(g.num_nodes());
    do {
      for (int u = 0; u < g.num_nodes(); ++u) random[u] = rng() % g.num_candidates(u);
    } while (g.MemoryBytes(random) > g.memory_limit());
    for (const std::vector<int>& start : {brute.choice, random}) {
      ExactOptions options = NoElimination(1);
      int calls = 0;
      options.start = Returning(start, &calls);
      ExactResult r = ExactSearch(g, options).value();
      ASSERT_EQ(r.method, "caller's start + branch and bound") << "seed " << seed;
      EXPECT_EQ(calls, 1);
      const double start_seconds = g.TotalSeconds(start);
      EXPECT_DOUBLE_EQ(r.start_seconds, start_seconds);
      // Never worse (up to the summation order's rounding).
      EXPECT_LE(r.solution.total_seconds, start_seconds * (1 + 1e-12)) << "seed " << seed;
      EXPECT_TRUE(r.solution.fits_memory);
      EXPECT_LE(r.lower_bound, brute.seconds + 1e-9);
      options.max_branch_nodes = int64_t{1} << 20;
      ExactResult full = ExactSearch(g, options).value();
      EXPECT_TRUE(full.proved_optimal) << full.note;
      EXPECT_NEAR(full.solution.total_seconds, brute.seconds, 1e-9 * brute.seconds)
          << "seed " << seed;
    }
  }
}

// Candidates 0 and 1 of `a` are identical, so pruning drops 1 (the later).
// With no elimination and no own autoddl, branch and bound gets the start
// as its incumbent: it finds nothing strictly cheaper (3 = 1 + 2 + 0 is the
// optimum; its one node proves it), so the answer is the start as given,
// pruned candidate 1 included.
TEST(ExactStart, AStartWithAPrunedCandidateIsReturnedAsGiven) {
  CostGraph g;
  int a = g.AddNode("a", {{1, 0}, {1, 0}, {5, 0}}).value();
  int b = g.AddNode("b", {{2, 0}, {1, 0}}).value();
  ASSERT_TRUE(g.AddEdge(a, b, EdgeMatrix::Create(3, 2, {0, 1, 0, 1, 1, 0}).value()).ok());
  ExactOptions options = NoElimination(1);
  int calls = 0;
  options.start = Returning({1, 0}, &calls);
  ExactResult r = ExactSearch(g, options).value();
  EXPECT_EQ(r.num_pruned, 1);
  EXPECT_EQ(r.method, "caller's start + branch and bound");
  EXPECT_TRUE(r.proved_optimal) << r.note;
  EXPECT_EQ(r.branch_nodes, 1);
  EXPECT_TRUE(r.answer_is_start);
  EXPECT_EQ(r.solution.choice, (std::vector<int>{1, 0}));
  EXPECT_DOUBLE_EQ(r.solution.total_seconds, 3);
}

TEST(ExactStart, ABadStartIsAnError) {
  CostGraph g;
  int a = g.AddNode("a", {{1, 10}, {2, 1}}).value();
  int b = g.AddNode("b", {{1, 10}, {2, 1}}).value();
  ASSERT_TRUE(g.AddEdge(a, b, EdgeMatrix::Create(2, 2, {0, 9, 9, 0}).value()).ok());
  ASSERT_TRUE(g.SetMemoryLimit(11).ok());
  ExactOptions options = NoElimination(1);
  int calls = 0;
  options.start = Returning({0}, &calls);
  Maybe<ExactResult> short_start = ExactSearch(g, options);
  ASSERT_FALSE(short_start.ok());
  options.start = Returning({0, 0}, &calls);  // 20 bytes > 11
  Maybe<ExactResult> too_big = ExactSearch(g, options);
  ASSERT_FALSE(too_big.ok());
  EXPECT_NE(too_big.status().message().find("above the limit"), std::string::npos)
      << too_big.status().message();
  options.start = []() -> Maybe<std::vector<int>> { return InvalidArgument("no start today"); };
  Maybe<ExactResult> failed = ExactSearch(g, options);
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().message(), "no start today");
  options.start = Returning({}, &calls);  // none: exact's own answer
  EXPECT_TRUE(ExactSearch(g, options).ok());
}

}  // namespace
}  // namespace ofl
