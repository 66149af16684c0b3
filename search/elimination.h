// Elimination: min-sum variable elimination over a CostGraph, the exact core
// of search/ (used by exact.h, and by autoddl.h on a spanning forest). Nodes
// are eliminated one at a time in a greedy order (the node whose neighbours'
// table, the product of their candidate counts, is smallest); eliminating x
// builds a table over its neighbours holding the best cost of x for each of
// their assignments, plus the argmin for the way back. Chains and trees
// never need a table over more than one node; a ladder needs two. The plan
// refuses graphs whose tables would pass a size cap. A plan points at its
// graph, which must outlive it. Solve() is const and reentrant.
#pragma once

#include <cstdint>
#include <vector>

#include "search/cost_graph.h"

namespace ofl {

class EliminationPlan {
 public:
  // `use_edge[e]` == 0 leaves edge e out (empty: every edge). Errors
  // (kUnimplemented) when one table would hold more than
  // `max_table_entries`, or all of them together more than
  // `max_total_entries`.
  static Maybe<EliminationPlan> Make(const CostGraph& graph, std::vector<char> use_edge,
                                     int64_t max_table_entries, int64_t max_total_entries);

  int64_t largest_table() const { return largest_table_; }
  int64_t total_entries() const { return total_entries_; }
  int width() const { return width_; }  // the most neighbours a node had when eliminated

  // The assignment minimising sum(compute + memory_weight * memory) plus the
  // used edges' transfer times; `objective` (if not null) gets that minimum.
  // Ties go to the lower candidate index.
  std::vector<int> Solve(double memory_weight, double* objective) const;

 private:
  EliminationPlan() = default;
  const CostGraph* graph_ = nullptr;
  std::vector<char> use_edge_;
  std::vector<int> order_;
  int64_t largest_table_ = 0;
  int64_t total_entries_ = 0;
  int width_ = 0;
};

// A memory weight (seconds per byte) at which saving one byte outweighs any
// cost difference: twice the sum of every node's and edge's cost spread.
// Solve() at this weight returns a least-memory assignment.
double DecisiveMemoryWeight(const CostGraph& graph);

// min over i < n of a[i] + b[i] (infinity when n is 0), computed with four
// running minima so the additions do not wait on each other. Exactly the
// value some a[i] + b[i] takes, so a scan for it finds the first argmin.
double MinOfSums(const double* a, const double* b, int n);

}  // namespace ofl
