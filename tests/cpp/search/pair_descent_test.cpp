// Pair descent: the joint move of an edge's two ends, worked by hand, and
// graphs where autoddl without it stops above the brute-force optimum.
#include "search/pair_descent.h"

#include <gtest/gtest.h>

#include "search/autoddl.h"
#include "tests/cpp/search/graph_makers.h"

namespace ofl {
namespace {

EdgeMatrixPtr Matrix(std::vector<double> data) { return EdgeMatrix::Create(2, 2, data).value(); }

// a - c must agree (10 s otherwise); each is 1 s at candidate 0 and free at
// 1 (5 bytes). b touches both by free edges. From (0, 0, 0), total 2 s, no
// single move helps (11 s); the pair (a, c) goes to (1, 1): 0 s. A limit of
// 9 bytes fits only one candidate 1, so then nothing moves.
TEST(PairDescentTest, MovesBothEndsByHand) {
  CostGraph g;
  int a = g.AddNode("a", {{1, 0}, {0, 5}}).value();
  int b = g.AddNode("b", {{0, 0}, {0, 0}}).value();
  int c = g.AddNode("c", {{1, 0}, {0, 5}}).value();
  ASSERT_TRUE(g.AddEdge(a, c, Matrix({0, 10, 10, 0})).ok());
  ASSERT_TRUE(g.AddEdge(a, b, Matrix({0, 0, 0, 0})).ok());
  ASSERT_TRUE(g.AddEdge(b, c, Matrix({0, 0, 0, 0})).ok());
  std::vector<int> x = {0, 0, 0};
  CoordinateDescent(g, x, 100, nullptr);
  ASSERT_EQ(x, (std::vector<int>{0, 0, 0}));  // the single-move trap
  PairDescent pairs(g);
  EXPECT_EQ(pairs.Pass(x), 1);
  EXPECT_EQ(x, (std::vector<int>{1, 0, 1}));
  EXPECT_EQ(g.TotalSeconds(x), 0);
  EXPECT_EQ(pairs.Pass(x), 0);  // nothing left to gain

  ASSERT_TRUE(g.SetMemoryLimit(9).ok());
  PairDescent limited(g);
  std::vector<int> y = {0, 0, 0};
  EXPECT_EQ(limited.Pass(y), 0);
  EXPECT_EQ(y, (std::vector<int>{0, 0, 0}));
}

// Parallel edges between the pair count together: a -> c and c -> a, each
// alone too weak to matter, together make (1, 1) the only good choice.
TEST(PairDescentTest, ParallelEdgesAddUp) {
  CostGraph g;
  int a = g.AddNode("a", {{1, 0}, {0, 0}}).value();
  int c = g.AddNode("c", {{1, 0}, {0, 0}}).value();
  ASSERT_TRUE(g.AddEdge(a, c, Matrix({0, 3, 3, 0})).ok());
  ASSERT_TRUE(g.AddEdge(c, a, Matrix({0, 3, 3, 0})).ok());
  std::vector<int> x = {0, 0};  // 2 s; a alone to 1: 0 + 1 + 6 = 7 s
  PairDescent pairs(g);
  EXPECT_EQ(pairs.Pass(x), 1);
  EXPECT_EQ(x, (std::vector<int>{1, 1}));
}

// Seeded random graphs with cycles (found by scanning seeds) where autoddl
// without pair moves (and without its elimination start and ball polish)
// stops above the brute-force optimum, and with pair moves reaches it.
TEST(PairDescentTest, AutoddlWithPairMovesReachesTheOptimumWhereItWasStuck) {
  AutoddlOptions without, with;
  without.pair_moves = false;
  without.elimination_max_entries = with.elimination_max_entries = 0;
  without.ball_passes = with.ball_passes = 0;
  for (uint64_t seed : {211, 560, 1343, 2303, 2304}) {
    int n = 3 + seed % 3;
    CostGraph g = testing::RandomGraph(seed, testing::Shape::kCyclic, n, 3, false, false);
    double brute = testing::BruteForce(g).seconds;
    double stuck = AutoddlSearch(g, without).value().solution.total_seconds;
    EXPECT_GT(stuck, brute + 1e-6) << "seed " << seed;
    AutoddlResult r = AutoddlSearch(g, with).value();
    EXPECT_NEAR(r.solution.total_seconds, brute, 1e-9 * brute) << "seed " << seed;
    int64_t pair_moves = 0;
    for (const AutoddlStart& s : r.starts) pair_moves += s.pair_moves;
    EXPECT_GT(pair_moves, 0) << "seed " << seed;
  }
}

// The elimination start ("exact when cheap") makes autoddl optimal on small
// graphs with cycles when memory does not bind, even with no local moves.
TEST(PairDescentTest, EliminationStartIsTheOptimumOnSmallGraphs) {
  AutoddlOptions o;
  o.max_tree_passes = 0;
  o.pair_moves = false;
  for (uint64_t seed = 0; seed < 60; ++seed) {
    CostGraph g = testing::RandomGraph(seed, testing::Shape::kCyclic, 6, 4, seed % 2, false);
    double brute = testing::BruteForce(g).seconds;
    AutoddlResult r = AutoddlSearch(g, o).value();
    ASSERT_EQ(r.starts.back().name, "elimination") << "seed " << seed;
    EXPECT_NEAR(r.starts.back().start_seconds, brute, 1e-9 * (1 + brute)) << "seed " << seed;
    EXPECT_NEAR(r.solution.total_seconds, brute, 1e-9 * (1 + brute)) << "seed " << seed;
  }
}

}  // namespace
}  // namespace ofl
