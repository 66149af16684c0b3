// Axis descent: a ring that only a whole-axis move escapes (worked by hand), a
// ring with a weight that only a coupled move escapes (free nodes, by hand),
// and on small random graphs one axis move is the brute-force optimum over
// the assignments that keep every node's other axes (without a memory
// limit; under one it keeps the limit and never raises the total).
#include "search/axis_descent.h"

#include <gtest/gtest.h>

#include <random>

#include "search/autoddl.h"
#include "search/pair_descent.h"
#include "search/tree_descent.h"
#include "tests/cpp/search/graph_makers.h"

namespace ofl {
namespace {

// Every node's candidate c has layout c / k1 on axis 0 and c % k1 on axis 1.
AxisLabels GridLabels(const CostGraph& g, int k1) {
  AxisLabels labels;
  labels.axes = 2;
  for (int u = 0; u < g.num_nodes(); ++u) {
    std::vector<int> of;
    for (int c = 0; c < g.num_candidates(u); ++c) {
      of.push_back(c / k1);
      of.push_back(c % k1);
    }
    labels.of.push_back(of);
  }
  return labels;
}

// A ring of six nodes, candidates (axis 0, axis 1) in {0, 1}^2; a node costs
// 1 s with axis 0 at 0 and nothing at 1; an edge costs 10 s when its ends
// differ on axis 0. From all (0, 0), 6 s: switching a run of r < 6 nodes
// saves r and adds two disagreeing edges (20 s), so no node, pair or tree
// block (a forest: never the whole ring) moves; the axis-0 move switches all
// six at once: 0 s.
TEST(AxisDescentTest, MovesARingThatNodesPairsAndTreesCannot) {
  CostGraph g;
  for (int i = 0; i < 6; ++i) {
    ASSERT_TRUE(g.AddNode("n" + std::to_string(i), {{1, 0}, {1, 0}, {0, 0}, {0, 0}}).ok());
  }
  std::vector<double> agree(16);
  for (int r = 0; r < 4; ++r) {
    for (int c = 0; c < 4; ++c) agree[r * 4 + c] = r / 2 == c / 2 ? 0 : 10;
  }
  EdgeMatrixPtr m = EdgeMatrix::Create(4, 4, agree).value();
  for (int i = 0; i < 6; ++i) ASSERT_TRUE(g.AddEdge(i, (i + 1) % 6, m).ok());
  std::vector<int> x(6, 0);
  CoordinateDescent(g, x, 100, nullptr);
  PairDescent pairs(g);
  TreeDescent trees(g);
  EXPECT_EQ(pairs.Pass(x) + trees.Pass(x) + trees.Pass(x), 0);
  ASSERT_EQ(x, std::vector<int>(6, 0));
  AxisDescent axes(g, GridLabels(g, 2), int64_t{1} << 20, 16, /*free_nodes=*/false);
  EXPECT_FALSE(axes.Move(1, x));  // axis 1 changes nothing's cost
  EXPECT_EQ(x, std::vector<int>(6, 0));
  EXPECT_TRUE(axes.Move(0, x));
  EXPECT_EQ(g.TotalSeconds(x), 0);
  for (int c : x) EXPECT_EQ(c / 2, 1);
  EXPECT_EQ(axes.Pass(x), 0);
}

// A coupled move: a ring of six ops O0..O5 with 3 x 3 candidates (p, q) and a
// weight W on O0 with 2 x 2. An op costs 1 s at p = 0, 0 s at p = 1, 0.25 s
// at p = 2 (q costs nothing); a ring edge 10 s when its ends differ in p; W
// costs 0.5 s at (1, 1), else 0; the edge W-O0 is 0 when W = f(O0's p), f(0)
// = (0, 0), f(1) = (1, 1), f(2) = (0, 1), else 10 s. From all (0, 0), 6 s.
// By hand: a ring that disagrees anywhere costs 20 s or more; all p = 1
// costs 0 with W = (1, 1) (0.5 s in all: the optimum), 10 s with any other
// W; all p = 2 costs 1.5 s with W = (0, 1). The plain axis-0 move keeps
// every q, W's too, so W cannot reach (1, 1) or (0, 1): all p = 1 costs 10
// s, all p = 2 11.5 s, and it stays at 6 s; the axis-1 move changes no op's
// cost, and W's q alone costs 10 s. With W free (its 4 candidates, fewer
// than the ops' 9), the axis-0 move reaches 0.5 s.
CostGraph CoupledRing() {
  CostGraph g;
  std::vector<Candidate> op;
  for (int c = 0; c < 9; ++c) op.push_back({c / 3 == 0 ? 1.0 : c / 3 == 1 ? 0.0 : 0.25, 0});
  for (int i = 0; i < 6; ++i) EXPECT_TRUE(g.AddNode("o" + std::to_string(i), op).ok());
  EXPECT_TRUE(g.AddNode("w", {{0, 0}, {0, 0}, {0, 0}, {0.5, 0}}).ok());
  std::vector<double> ring(81), weight(36);
  for (int r = 0; r < 9; ++r) {
    for (int c = 0; c < 9; ++c) ring[r * 9 + c] = r / 3 == c / 3 ? 0 : 10;
  }
  const int f[3] = {0, 3, 1};  // W's candidate (p * 2 + q) matching O0's p
  for (int w = 0; w < 4; ++w) {
    for (int c = 0; c < 9; ++c) weight[w * 9 + c] = f[c / 3] == w ? 0 : 10;
  }
  EdgeMatrixPtr m = EdgeMatrix::Create(9, 9, ring).value();
  for (int i = 0; i < 6; ++i) EXPECT_TRUE(g.AddEdge(i, (i + 1) % 6, m).ok());
  EXPECT_TRUE(g.AddEdge(6, 0, EdgeMatrix::Create(4, 9, weight).value()).ok());
  return g;
}

AxisLabels CoupledLabels(const CostGraph& g) {
  AxisLabels labels;
  labels.axes = 2;
  for (int u = 0; u < g.num_nodes(); ++u) {
    const int k1 = g.num_candidates(u) == 9 ? 3 : 2;
    std::vector<int> of;
    for (int c = 0; c < g.num_candidates(u); ++c) {
      of.push_back(c / k1);
      of.push_back(c % k1);
    }
    labels.of.push_back(of);
  }
  return labels;
}

TEST(AxisDescentTest, FreeNodesMakeACoupledMove) {
  CostGraph g = CoupledRing();
  // The plain moves: stuck at 6 s.
  std::vector<int> x(7, 0);
  AxisDescent plain(g, CoupledLabels(g), int64_t{1} << 20, 16, /*free_nodes=*/false);
  EXPECT_EQ(plain.Pass(x), 0);
  EXPECT_EQ(x, std::vector<int>(7, 0));
  EXPECT_NEAR(g.TotalSeconds(x), 6.0, 1e-12);
  // Free nodes, a cap that fits every node free: the whole graph's optimum.
  AxisDescent all(g, CoupledLabels(g), int64_t{1} << 20, 16, /*free_nodes=*/true);
  EXPECT_TRUE(all.Move(0, x));
  EXPECT_EQ(all.free_cutoff(), 9);
  EXPECT_NEAR(g.TotalSeconds(x), 0.5, 1e-12);
  EXPECT_EQ(x, (std::vector<int>{3, 3, 3, 3, 3, 3, 3}));  // ops (1, 0), W (1, 1)
  // A cap below the ring's tables with 9 candidates (a node of the ring
  // eliminated first needs 9 x 9 = 81 entries) but above those with 3:
  // only W is free, and that is enough.
  x.assign(7, 0);
  AxisDescent weights(g, CoupledLabels(g), 80, 16, /*free_nodes=*/true);
  EXPECT_TRUE(weights.Move(0, x));
  EXPECT_EQ(weights.free_cutoff(), 4);
  EXPECT_NEAR(g.TotalSeconds(x), 0.5, 1e-12);
  EXPECT_EQ(x, (std::vector<int>{3, 3, 3, 3, 3, 3, 3}));
  EXPECT_EQ(weights.Pass(x), 0);
}

// Random graphs of 7 nodes, K = 2 x 2 or 3 x 2 candidates, cycles and
// shared matrices: one axis move from a random feasible start against every
// assignment that keeps the other axis of each node.
TEST(AxisDescentTest, OneMoveIsTheOptimumOverItsAxis) {
  for (uint64_t seed = 0; seed < 120; ++seed) {
    std::mt19937_64 rng(seed);
    const bool limit = seed % 2 == 1;
    CostGraph g;
    const int n = 7;
    for (int i = 0; i < n; ++i) {
      int k = (rng() % 2 == 0 ? 2 : 3) * 2;
      std::vector<Candidate> cands;
      for (int c = 0; c < k; ++c) {
        cands.push_back({testing::Uniform(rng, 0, 10), static_cast<int64_t>(rng() % 8)});
      }
      ASSERT_TRUE(g.AddNode("n" + std::to_string(i), cands).ok());
    }
    for (int i = 1; i < n; ++i) {
      int a = rng() % i;
      ASSERT_TRUE(
          g.AddEdge(a, i, testing::RandomMatrix(rng, g.num_candidates(a), g.num_candidates(i)))
              .ok());
    }
    for (int e = 0; e < 3; ++e) {
      int a = rng() % n, b = rng() % n;
      if (a == b) continue;
      ASSERT_TRUE(
          g.AddEdge(a, b, testing::RandomMatrix(rng, g.num_candidates(a), g.num_candidates(b)))
              .ok());
    }
    std::vector<int> x(n);
    for (int u = 0; u < n; ++u) {  // least memory: fits any feasible limit
      const auto& c = g.node(u).candidates;
      for (size_t k = 0; k < c.size(); ++k) {
        if (c[k].memory_bytes < c[x[u]].memory_bytes) x[u] = k;
      }
    }
    if (limit) {
      ASSERT_TRUE(g.SetMemoryLimit(g.MemoryBytes(x) + rng() % 12).ok());
    }
    const int axis = seed % 4 < 2 ? 0 : 1;
    // Brute force over the nodes' layouts on `axis`, the other kept.
    double best = std::numeric_limits<double>::infinity();
    std::vector<int> layout(n, 0), y(n);
    while (true) {
      bool ok = true;
      for (int u = 0; u < n && ok; ++u) {
        const int per_axis0 = g.num_candidates(u) / 2;
        y[u] = axis == 0 ? layout[u] * 2 + x[u] % 2 : (x[u] / 2) * 2 + layout[u];
        ok = layout[u] < (axis == 0 ? per_axis0 : 2);
      }
      if (ok && g.MemoryBytes(y) <= g.memory_limit()) best = std::min(best, g.TotalSeconds(y));
      int i = 0;
      while (i < n && ++layout[i] == 3) layout[i++] = 0;
      if (i == n) break;
    }
    const double before = g.TotalSeconds(x);
    AxisDescent axes(g, GridLabels(g, 2), int64_t{1} << 20, 16, /*free_nodes=*/false);
    const bool moved = axes.Move(axis, x);
    EXPECT_LE(g.MemoryBytes(x), g.memory_limit()) << "seed " << seed;
    EXPECT_GE(g.TotalSeconds(x), best - 1e-9 * (1 + best)) << "seed " << seed;
    EXPECT_EQ(moved, g.TotalSeconds(x) < before) << "seed " << seed;
    if (!limit) {
      EXPECT_NEAR(g.TotalSeconds(x), best, 1e-9 * (1 + best)) << "seed " << seed;
    }
  }
}

TEST(AxisDescentTest, LabelsFollowPruningAndMustMatchTheGraph) {
  CostGraph g;
  ASSERT_TRUE(g.AddNode("a", {{1, 0}, {2, 0}, {3, 0}, {4, 0}}).ok());
  AxisLabels labels = GridLabels(g, 2);
  EXPECT_TRUE(labels.usable(g));
  AxisLabels kept = labels.Restricted({{1, 2}});
  EXPECT_EQ(kept.of, (std::vector<std::vector<int>>{{0, 1, 1, 0}}));
  EXPECT_FALSE(kept.usable(g));  // two candidates' labels for a node of four
  AxisLabels one_axis;
  one_axis.axes = 1;
  one_axis.of = {{0, 1, 2, 3}};
  EXPECT_FALSE(one_axis.usable(g));  // a 1-D mesh: the whole problem, no axis moves
}

}  // namespace
}  // namespace ofl
