// Ball descent: coordinate descent whose coordinates are small connected
// neighbourhoods. For each node in index order, its ball (the nodes found
// breadth-first from it, at most `max_nodes` of them within `radius` edges) is
// re-chosen exactly, with every other node fixed, by variable elimination over
// the induced subgraph (the fixed nodes' edges become per-candidate costs); a
// ball whose elimination would need more than `max_entries` table entries is
// halved until it fits. The work is capped (BallOptions::budget), so large
// graphs get only as many balls as it pays.
//
// Refers to its graph (which must outlive it); not synchronised.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "search/cost_graph.h"
#include "search/elimination.h"

// A ball moves only when that strictly lowers the total (relative 1e-12) and
// keeps the memory limit (a binding limit is handled by a Lagrangian weight, as
// autoddl's spanning-tree start). This is the "re-choose a region exactly when
// its table is small" move: a handful of neighbours that must switch together,
// cycles included, which neither single nodes, tree blocks nor pairs reach.
// Internal to search/ (autoddl.cpp).

namespace ofl {

struct BallOptions {
  int radius = 8;
  int max_nodes = 48;
  int64_t max_entries = int64_t{1} << 20;
  int lagrangian_iterations = 16;
  // Work budget of a BallDescent over its lifetime, in table entries and
  // candidate-edge visits; passes stop (moving nothing more) once spent.
  // Negative: automatic, 2^30 / nodes clamped to [2^18, 2^22] (small graphs
  // are cheap to search, so they get larger balls' worth of work).
  int64_t budget = -1;
};

class BallDescent {
 public:
  BallDescent(const CostGraph& graph, const BallOptions& options);  // `graph` must outlive it
  // Forgets what the balls have seen (before a new start).
  void Reset();
  // One pass over every node's ball; returns how many moved. A ball none of
  // whose nodes or their neighbours changed since its last visit is skipped.
  int Pass(std::vector<int>& choice);
  int64_t work() const { return work_; }  // spent so far

 private:
  std::vector<int> Ball(int centre, int max_nodes);
  enum class Outcome { kTooBig, kStays, kMoved };
  // Re-chooses `ball` exactly (kTooBig: its elimination passes the cap).
  Outcome Solve(const std::vector<int>& ball, std::vector<int>& choice, int64_t& used);

  const CostGraph& graph_;
  BallOptions options_;
  std::vector<int64_t> checked_;  // per centre: the clock at its last visit (-1: never)
  std::vector<int64_t> touched_;  // per node: the clock when it or a neighbour moved
  std::vector<int> size_;         // per centre: the ball size that fit the table cap
  std::vector<int> local_;        // node -> index in the ball, -1 outside
  std::map<std::vector<int>, int64_t> solved_;  // sorted ball -> the clock it stayed at
  int64_t clock_ = 0;
  int64_t work_ = 0;
  int64_t budget_ = 0;
  EliminationWorkspace workspace_;  // every ball's solves
};

}  // namespace ofl
