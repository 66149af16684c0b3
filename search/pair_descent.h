// Pair descent: coordinate descent whose coordinates are the two ends of an
// edge. A pass visits the edges in index order (parallel edges once) and
// re-chooses both ends jointly, K_u x K_v options, with every other node
// fixed; the pair moves only when that strictly lowers the total (relative
// 1e-12) and keeps the memory limit. This is the coupled move single-node
// sweeps and tree blocks miss when two neighbours must switch together but
// each alone makes things worse against a third node both touch (a cycle:
// tree blocks never hold all three edges). Internal to search/ (autoddl.cpp).
// A PairDescent refers to its graph (which must outlive it) and remembers
// which pairs saw no change since their last visit; not synchronised.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "search/cost_graph.h"

namespace ofl {

class PairDescent {
 public:
  explicit PairDescent(const CostGraph& graph);  // `graph` must outlive it
  // Forgets what the pairs have seen (before a new start).
  void Reset();
  // One pass over the pairs; returns how many moved. A pair none of whose
  // ends or their neighbours changed since its last visit is skipped.
  int Pass(std::vector<int>& choice);

 private:
  const CostGraph& graph_;
  std::vector<std::pair<int, int>> pairs_;  // (u, v), u < v, each adjacent pair once
  std::vector<int64_t> checked_;            // per pair: the clock at its last visit (-1: never)
  std::vector<int64_t> touched_;            // per node: the clock when it or a neighbour moved
  int64_t clock_ = 0;
  std::vector<double> local_u_, local_v_;
  // The edges joining the pair, seen from u: (matrix, u is its row).
  std::vector<std::pair<const EdgeMatrix*, bool>> between_;
};

}  // namespace ofl
