// Tree-block descent: the forest split, exact block moves, and that adding
// tree passes to autoddl never makes a start's answer worse.
#include "search/tree_descent.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <set>

#include "search/autoddl.h"
#include "tests/cpp/search/graph_makers.h"

namespace ofl {
namespace {

// Every node in exactly one block, and no block holds a cycle (parallel
// edges count once).
void ExpectForestPartition(const CostGraph& g, const std::vector<std::vector<int>>& blocks) {
  std::vector<int> block_of(g.num_nodes(), -1);
  for (size_t b = 0; b < blocks.size(); ++b) {
    for (int u : blocks[b]) {
      EXPECT_EQ(block_of[u], -1) << "node " << u << " in two blocks";
      block_of[u] = b;
    }
  }
  for (int u = 0; u < g.num_nodes(); ++u) EXPECT_GE(block_of[u], 0) << "node " << u;
  std::vector<int> parent(g.num_nodes());
  std::iota(parent.begin(), parent.end(), 0);
  auto root = [&](int u) {
    while (parent[u] != u) u = parent[u];
    return u;
  };
  std::set<std::pair<int, int>> seen;
  for (int e = 0; e < g.num_edges(); ++e) {
    int a = g.edge(e).from, b = g.edge(e).to;
    if (block_of[a] != block_of[b] || !seen.insert({std::min(a, b), std::max(a, b)}).second) {
      continue;
    }
    ASSERT_NE(root(a), root(b)) << "a cycle through edge " << a << " - " << b;
    parent[root(a)] = root(b);
  }
}

TEST(TreeDescentTest, BlocksPartitionTheNodesIntoForests) {
  for (uint64_t seed = 0; seed < 60; ++seed) {
    CostGraph g =
        testing::RandomGraph(seed, testing::Shape::kCyclic, 2 + seed % 30, 3, true, false);
    ExpectForestPartition(g, ForestBlocks(g, false));
    ExpectForestPartition(g, ForestBlocks(g, true));
  }
  CostGraph ladder = testing::Ladder(50, 4, 1);
  EXPECT_EQ(ForestBlocks(ladder, false).size(), 2u);
  CostGraph chain = testing::RandomGraph(3, testing::Shape::kChain, 40, 3, false, false);
  EXPECT_EQ(ForestBlocks(chain, false).size(), 1u);
}

// On a chain one block holds everything: one pass from any start is the
// optimum.
TEST(TreeDescentTest, OnePassSolvesAChain) {
  for (uint64_t seed = 0; seed < 30; ++seed) {
    CostGraph g =
        testing::RandomGraph(seed, testing::Shape::kChain, 2 + seed % 7, 4, seed % 2, false);
    std::vector<int> choice(g.num_nodes(), 0);
    TreeDescent trees(g);
    trees.Pass(choice);
    double brute = testing::BruteForce(g).seconds;
    EXPECT_NEAR(g.TotalSeconds(choice), brute, 1e-9 * (1 + brute)) << "seed " << seed;
    EXPECT_EQ(trees.Pass(choice), 0);  // the other split: nothing left to gain
  }
}

TEST(TreeDescentTest, TreePassesNeverMakeAStartWorse) {
  for (uint64_t seed = 0; seed < 80; ++seed) {
    CostGraph g =
        testing::RandomGraph(seed, testing::Shape::kCyclic, 3 + seed % 25, 5, true, seed % 3 == 0);
    AutoddlOptions plain;
    plain.max_tree_passes = 0;
    plain.num_random_starts = 1;
    plain.seed = seed;
    AutoddlOptions trees = plain;
    trees.max_tree_passes = 100;
    AutoddlResult a = AutoddlSearch(g, plain).value();
    AutoddlResult b = AutoddlSearch(g, trees).value();
    ASSERT_EQ(a.starts.size(), b.starts.size());
    for (size_t i = 0; i < a.starts.size(); ++i) {
      EXPECT_LE(b.starts[i].final_seconds, a.starts[i].final_seconds) << "seed " << seed;
    }
    EXPECT_TRUE(b.solution.fits_memory);
  }
}

// What a TreeDescent remembers between passes (blocks whose surroundings
// did not change, settled blocks whose share did not grow, trees whose
// outside neighbours kept their choices) only skips work: after any
// changes to the choice in between, its passes give exactly what a fresh
// TreeDescent's passes give.
TEST(TreeDescentTest, RememberedBlocksAndTreesGiveWhatFreshPassesGive) {
  int moved = 0;
  for (uint64_t seed = 0; seed < 60; ++seed) {
    CostGraph g = testing::RandomGraph(seed, testing::Shape::kCyclic, 10 + seed % 50, 5,
                                       seed % 2 == 0, seed % 3 == 0);
    std::mt19937_64 rng(seed);
    std::vector<int> x(g.num_nodes());
    for (int u = 0; u < g.num_nodes(); ++u) {  // least memory: within any feasible limit
      const std::vector<Candidate>& c = g.node(u).candidates;
      x[u] = std::min_element(c.begin(), c.end(),
                              [](const Candidate& a, const Candidate& b) {
                                return a.memory_bytes < b.memory_bytes;
                              }) -
             c.begin();
    }
    std::vector<int> y = x;
    TreeDescent remembering(g);
    for (int round = 0; round < 12; ++round) {
      for (int split = 0; split < 2; ++split) moved += remembering.Pass(x);
      TreeDescent fresh(g);
      for (int split = 0; split < 2; ++split) fresh.Pass(y);
      ASSERT_EQ(x, y) << "seed " << seed << " round " << round;
      for (int k = 0; k < 3; ++k) {  // other moves: a few nodes changed, within the limit
        const int u = rng() % g.num_nodes();
        const int before = x[u];
        x[u] = rng() % g.num_candidates(u);
        if (g.MemoryBytes(x) > g.memory_limit()) x[u] = before;
      }
      y = x;
    }
  }
  EXPECT_GT(moved, 100);  // the passes did move
}

}  // namespace
}  // namespace ofl
