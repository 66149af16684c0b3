// Cutset conditioning against brute force: seeded graphs with cycles, the
// elimination cap set so low that a cutset is needed; with and without
// memory limits (where memory binds the answer fits and is never below the
// optimum).
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

}  // namespace
}  // namespace ofl
