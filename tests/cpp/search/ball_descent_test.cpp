// Ball descent: a triangle that only a three-node move escapes (worked by
// hand), and on small random graphs a ball covering the whole graph reaches
// the brute-force optimum from any start.
#include "search/ball_descent.h"

#include <gtest/gtest.h>

#include "search/autoddl.h"
#include "search/pair_descent.h"
#include "search/tree_descent.h"
#include "tests/cpp/search/graph_makers.h"

namespace ofl {
namespace {

// a, b, c pairwise must agree (10 s per disagreeing edge); each is 1 s at
// candidate 0 and free at 1. From (0, 0, 0), 3 s: one node to 1 costs 2 +
// 20, a pair 1 + 20, a tree block of two the same; all three: 0 s.
TEST(BallDescentTest, MovesATriangleThatPairsAndTreesCannot) {
  CostGraph g;
  for (const char* name : {"a", "b", "c"}) ASSERT_TRUE(g.AddNode(name, {{1, 0}, {0, 0}}).ok());
  EdgeMatrixPtr agree = EdgeMatrix::Create(2, 2, {0, 10, 10, 0}).value();
  ASSERT_TRUE(g.AddEdge(0, 1, agree).ok());
  ASSERT_TRUE(g.AddEdge(1, 2, agree).ok());
  ASSERT_TRUE(g.AddEdge(0, 2, agree).ok());
  std::vector<int> x = {0, 0, 0};
  CoordinateDescent(g, x, 100, nullptr);
  PairDescent pairs(g);
  EXPECT_EQ(pairs.Pass(x), 0);
  TreeDescent trees(g);
  EXPECT_EQ(trees.Pass(x) + trees.Pass(x), 0);
  ASSERT_EQ(x, (std::vector<int>{0, 0, 0}));
  BallDescent balls(g, BallOptions{});
  EXPECT_EQ(balls.Pass(x), 1);
  EXPECT_EQ(x, (std::vector<int>{1, 1, 1}));
  EXPECT_EQ(g.TotalSeconds(x), 0);
  EXPECT_EQ(balls.Pass(x), 0);
  // A spent budget moves nothing.
  BallOptions none;
  none.budget = 0;
  BallDescent idle(g, none);
  std::vector<int> y = {0, 0, 0};
  EXPECT_EQ(idle.Pass(y), 0);
  EXPECT_EQ(y, (std::vector<int>{0, 0, 0}));
}

// Random connected graphs of 6 nodes: the first ball holds them all, so one
// pass from the greedy-free all-zero start is the optimum; under a memory
// limit the pass keeps it and never raises the total.
TEST(BallDescentTest, WholeGraphBallIsTheOptimum) {
  BallOptions o;
  o.radius = 6;
  o.max_nodes = 6;
  o.max_entries = int64_t{1} << 20;
  for (uint64_t seed = 0; seed < 80; ++seed) {
    bool limit = seed % 2 == 1;
    CostGraph g = testing::RandomGraph(seed, testing::Shape::kCyclic, 6, 4, seed % 3 == 0, limit);
    testing::BruteForceAnswer brute = testing::BruteForce(g);
    std::vector<int> x(g.num_nodes());
    for (int u = 0; u < g.num_nodes(); ++u) {  // the least-memory candidates fit any limit
      const auto& c = g.node(u).candidates;
      for (size_t k = 0; k < c.size(); ++k) {
        if (c[k].memory_bytes < c[x[u]].memory_bytes) x[u] = k;
      }
    }
    double before = g.TotalSeconds(x);
    BallDescent balls(g, o);
    balls.Pass(x);
    EXPECT_LE(g.MemoryBytes(x), g.memory_limit()) << "seed " << seed;
    EXPECT_LE(g.TotalSeconds(x), before + 1e-12) << "seed " << seed;
    EXPECT_GE(g.TotalSeconds(x), brute.seconds - 1e-9 * (1 + brute.seconds)) << "seed " << seed;
    if (!limit) {
      EXPECT_NEAR(g.TotalSeconds(x), brute.seconds, 1e-9 * (1 + brute.seconds)) << "seed " << seed;
    }
  }
}

}  // namespace
}  // namespace ofl
