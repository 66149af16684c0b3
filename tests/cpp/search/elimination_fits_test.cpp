// EliminationPlan::Fits (the axis moves' cheap probe: the greedy order
// simulated over candidate counts alone) against building the restricted
// graph and asking EliminationPlan::Make, on seeded random cyclic graphs
// under many table caps; and on the whole graph against Make itself.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "search/elimination.h"
#include "tests/cpp/search/graph_makers.h"

namespace ofl {
namespace {

// `g` with node u keeping its first sizes[u] candidates (the same edges,
// their matrices cut to the kept rows and columns).
CostGraph FirstCandidates(const CostGraph& g, const std::vector<int>& sizes) {
  CostGraph sub;
  for (int u = 0; u < g.num_nodes(); ++u) {
    const auto& all = g.node(u).candidates;
    EXPECT_TRUE(sub.AddNode(g.node(u).name, {all.begin(), all.begin() + sizes[u]}).ok());
  }
  for (int e = 0; e < g.num_edges(); ++e) {
    const CostEdge& edge = g.edge(e);
    const int rows = sizes[edge.from], cols = sizes[edge.to];
    std::vector<double> cut;
    for (int r = 0; r < rows; ++r) {
      for (int c = 0; c < cols; ++c) cut.push_back(edge.matrix->at(r, c));
    }
    EXPECT_TRUE(sub.AddEdge(edge.from, edge.to, EdgeMatrix::Create(rows, cols, cut).value()).ok());
  }
  return sub;
}

TEST(EliminationFitsTest, AgreesWithMakeOnTheRestrictedGraph) {
  const int64_t caps[] = {1, 3, 8, 20, 64, 200, 1000, int64_t{1} << 20};
  int fits = 0, refused = 0;
  for (uint64_t seed = 0; seed < 150; ++seed) {
    std::mt19937_64 rng(seed * 7919 + 1);
    const int n = 6 + static_cast<int>(seed % 15);
    const CostGraph g =
        testing::RandomGraph(seed, testing::Shape::kCyclic, n, 6, seed % 3 == 0, false);
    std::vector<int> sizes(n);
    for (int u = 0; u < n; ++u) sizes[u] = 1 + static_cast<int>(rng() % g.num_candidates(u));
    const CostGraph sub = FirstCandidates(g, sizes);
    std::vector<int> all(n);
    for (int u = 0; u < n; ++u) all[u] = g.num_candidates(u);
    for (int64_t table : caps) {
      for (int64_t total : {table, table * 4, int64_t{1} << 30}) {
        const bool made = EliminationPlan::Make(sub, {}, table, total).ok();
        EXPECT_EQ(EliminationPlan::Fits(g, sizes, table, total), made)
            << "seed " << seed << " caps " << table << " " << total;
        EXPECT_EQ(EliminationPlan::Fits(g, all, table, total),
                  EliminationPlan::Make(g, {}, table, total).ok())
            << "seed " << seed << " whole graph, caps " << table << " " << total;
        (made ? fits : refused) += 1;
      }
    }
  }
  EXPECT_GT(fits, 100);  // both answers are exercised
  EXPECT_GT(refused, 100);
}

}  // namespace
}  // namespace ofl
