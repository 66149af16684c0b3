// Dominance pruning: drops candidates proven never needed, before a search.
// Candidate a of node u is dominated by b when b's compute and memory are no
// worse, and for every edge at u and every remaining candidate y of the
// neighbour, b's transfer time is no worse than a's (ties broken by index,
// so of two identical candidates the later goes). Replacing a by b in any
// assignment then costs no more and needs no more memory, so some optimum
// (under any memory limit) survives. Pruning repeats until nothing changes:
// fewer candidates at a neighbour can make more rows comparable.
// Value types; not synchronised.
#pragma once

#include <cstdint>
#include <vector>

#include "search/cost_graph.h"

namespace ofl {

struct PrunedGraph {
  CostGraph graph;                     // same nodes, edges and limit; fewer candidates
  std::vector<std::vector<int>> kept;  // per node: original indices of its candidates
  int64_t num_pruned = 0;              // candidates removed over all nodes

  // A choice over `graph` as a choice over the original graph.
  std::vector<int> ToOriginal(const std::vector<int>& choice) const;
};

// Edge matrices are shared where the two ends keep the same candidates.
PrunedGraph PruneDominated(const CostGraph& graph);

// The graph unchanged (a copy), for a search with pruning switched off.
PrunedGraph PruneNothing(const CostGraph& graph);

}  // namespace ofl
