// Cutset conditioning: the exact optimum of a CostGraph too wide for variable
// elimination, by fixing a few nodes (the cutset) to each of their joint
// assignments in turn and eliminating the rest, which the fixed nodes' edges
// turn into per-candidate costs. Pure function of a const graph; thread-safe.
// Internal to search/ (autoddl.cpp: the exact answer of the aliased graph of
// block_alias.h, whose layer-to-layer edges close rings).
#pragma once

#include <cstdint>
#include <vector>

#include "search/cost_graph.h"

// The cutset is chosen greedily: while the graph left would need tables over
// `max_entries` in all, the node with the most neighbours left (ties: fewer
// candidates, then the lower index) joins it. Each assignment of the cutset
// is solved by elimination (under a binding memory limit by the Lagrangian
// search of elimination.h, so the answer then is the best found, not proved);
// the cheapest answer within the limit wins (ties: the first in
// lexicographic order of the cutset's candidates). The work is capped by
// `budget`, counted in the plan's table entries per solve: when all the
// assignments would pass it, or when even the least-memory answers break
// the limit, the answer is empty; a Lagrangian search counts as
// `lagrangian_iterations` more solves, and once the next solve would pass
// the budget the assignments left are skipped (the best so far, not exact).

namespace ofl {

struct CutsetOptions {
  int64_t max_entries = int64_t{1} << 20;  // elimination tables, all together
  int64_t budget = int64_t{1} << 27;       // assignments x table entries
  int max_cutset = 8;                      // nodes in the cutset at most
  int lagrangian_iterations = 16;
};

struct CutsetAnswer {
  std::vector<int> choice;  // empty: over the budget, or nothing fits
  std::vector<int> cutset;
  int64_t assignments = 0;  // solved
  bool exact = false;       // the optimum (memory did not bind in any solve)
};

CutsetAnswer CutsetSolve(const CostGraph& graph, const CutsetOptions& options);

}  // namespace ofl
