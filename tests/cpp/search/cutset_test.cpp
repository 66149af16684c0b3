// Cutset conditioning against brute force: seeded graphs with cycles, the
// elimination cap set so low that a cutset is needed; with and without
// memory limits (where memory binds the answer fits and is never below the
// optimum); the work budget, Lagrangian searches included.
#include "search/cutset.h"

#include <gtest/gtest.h>

#include "tests/cpp/search/graph_makers.h"

namespace ofl {
namespace {

using testing::BruteForce;
using testing::RandomGraph;
using testing::Shape;

TEST(CutsetTest, OptimumOfCyclicGraphsWithATinyTableCap) {
  int conditioned = 0;
  for (uint64_t seed = 0; seed < 60; ++seed) {
    CostGraph g = RandomGraph(seed, Shape::kCyclic, 5 + seed % 4, 4, seed % 2 == 0, false);
    CutsetOptions options;
    options.max_entries = 8;  // tables over 3+ nodes refused: rings need a cutset
    CutsetAnswer a = CutsetSolve(g, options);
    ASSERT_FALSE(a.choice.empty()) << "seed " << seed;
    EXPECT_TRUE(a.exact);
    conditioned += !a.cutset.empty();
    const double want = BruteForce(g).seconds;
    EXPECT_NEAR(g.TotalSeconds(a.choice), want, 1e-9 * want + 1e-12) << "seed " << seed;
  }
  EXPECT_GT(conditioned, 20);  // the cap made most of them condition
}

TEST(CutsetTest, MemoryLimitsAreKept) {
  for (uint64_t seed = 0; seed < 40; ++seed) {
    CostGraph g = RandomGraph(100 + seed, Shape::kCyclic, 6, 3, false, true);
    CutsetOptions options;
    options.max_entries = 4;
    CutsetAnswer a = CutsetSolve(g, options);
    const testing::BruteForceAnswer want = BruteForce(g);
    ASSERT_FALSE(a.choice.empty()) << "seed " << seed;
    EXPECT_LE(g.MemoryBytes(a.choice), g.memory_limit());
    EXPECT_GE(g.TotalSeconds(a.choice), want.seconds * (1 - 1e-9)) << "seed " << seed;
    if (a.exact) {
      EXPECT_NEAR(g.TotalSeconds(a.choice), want.seconds, 1e-9 * want.seconds + 1e-12);
    }
  }
}

TEST(CutsetTest, OverTheBudgetGivesNothing) {
  CostGraph g = RandomGraph(7, Shape::kCyclic, 8, 4, false, false);
  CutsetOptions options;
  options.max_entries = 4;
  options.budget = 1;
  EXPECT_TRUE(CutsetSolve(g, options).choice.empty());
}

// Under a binding memory limit each assignment may run a Lagrangian search,
// which the up-front check cannot foresee: the budget counts it, and once
// the next solve would pass the budget the assignments left are skipped.
// The answer then is the best so far: it fits, is never below the optimum,
// and is not called exact.
TEST(CutsetTest, LagrangianSearchesCountAgainstTheBudget) {
  int partial = 0;
  for (uint64_t seed = 0; seed < 40; ++seed) {
    CostGraph g = RandomGraph(100 + seed, Shape::kCyclic, 6, 3, false, true);
    CutsetOptions options;
    options.max_entries = 4;
    const CutsetAnswer full = CutsetSolve(g, options);
    if (full.exact || full.assignments < 2) continue;  // memory never bound
    const double optimum = BruteForce(g).seconds;
    int64_t solved = 0;
    const int64_t cap = options.budget;
    for (int64_t budget = 1; budget <= cap; budget *= 2) {
      options.budget = budget;
      const CutsetAnswer a = CutsetSolve(g, options);
      EXPECT_GE(a.assignments, solved) << "seed " << seed << " budget " << budget;
      solved = a.assignments;
      if (a.choice.empty() || a.assignments == full.assignments) continue;
      ++partial;
      EXPECT_FALSE(a.exact) << "seed " << seed;
      EXPECT_LE(g.MemoryBytes(a.choice), g.memory_limit()) << "seed " << seed;
      EXPECT_GE(g.TotalSeconds(a.choice), optimum * (1 - 1e-9)) << "seed " << seed;
    }
  }
  EXPECT_GT(partial, 0);  // some budgets stopped between assignments
}

}  // namespace
}  // namespace ofl
