// Axis descent: moves along one mesh axis at a time, over the whole graph. The
// caller (graph/) labels every candidate of every node with its layout on each
// hierarchy axis (AxisLabels: an id per axis, equal ids = the same layout on
// that axis).
//
// Refers to its graph (which must outlive it); not synchronised.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <tuple>
#include <vector>

#include "search/cost_graph.h"
#include "search/elimination.h"

// An axis move on axis a re-chooses, for every node at once, the layout on axis
// a with the layouts on the other axes fixed: each node keeps the candidates
// whose labels on every other axis equal its current choice's, and that
// restricted graph (a few candidates per node: on GPT [16, 8], 36 -> about 6)
// is solved exactly by variable elimination, under a binding memory limit by
// the Lagrangian search (LagrangianSolve). This is the move a whole-model
// switch needs, e.g. every attention op replicating the outer axis at once
// (redundant compute instead of inter-node traffic): single nodes, pairs, tree
// blocks and balls each see only a piece of it, and every piece alone costs
// more. A move is taken only when it strictly lowers the total (relative 1e-12)
// and keeps the limit; a restricted graph whose elimination passes the table
// cap is skipped. Internal to search/ (autoddl.cpp).
//
// Free nodes (`free_nodes`): the restriction also forbids coupled moves, where
// a node must change its layout on another axis in the same move (e.g. a
// weight whose best layout there depends on the ops' new one on axis a). So,
// in each move, the nodes of at most a cutoff of candidates (weights, small
// ops: the fewest) keep ALL their candidates and the others the restricted
// set; the cutoff is the largest candidate count whose elimination stays
// within the table cap, found by bisection over the nodes' distinct counts (0
// when even the smallest passes it: the plain move). A cutoff at the largest
// count makes the move the exact optimum of the whole graph.

namespace ofl {

// Per node, per candidate, one label per axis: of[u][c * axes + a]. Empty
// (axes 0 or no nodes): no axis moves.
struct AxisLabels {
  int axes = 0;
  std::vector<std::vector<int>> of;
  // The same labels for a graph whose node u keeps candidates kept[u]
  // (original indices), e.g. after dominance pruning.
  AxisLabels Restricted(const std::vector<std::vector<int>>& kept) const;
  bool usable(const CostGraph& graph) const;  // 2+ axes, one label per axis and candidate
};

class AxisDescent {
 public:
  // `graph` must outlive it; `labels` are copied.
  AxisDescent(const CostGraph& graph, AxisLabels labels, int64_t max_entries,
              int lagrangian_iterations, bool free_nodes);
  // One move per axis, in order; returns how many moved.
  int Pass(std::vector<int>& choice);
  // Re-chooses axis `a` of every node (the others fixed); true when it moved.
  bool Move(int a, std::vector<int>& choice);
  int64_t entries() const { return entries_; }  // elimination table entries spent
  // The free nodes' cutoff of the last move solved (0: none free, or no move).
  int free_cutoff() const { return free_cutoff_; }

 private:
  // A restricted graph and its elimination plan (which points at it).
  struct Restricted;
  // Move's elimination (Move skips a choice the axis already stayed at).
  bool Solve(int a, std::vector<int>& choice);
  // Per node, the candidates a move on axis `a` keeps: all of them for the
  // first `freed` nodes of order_, else those agreeing with `choice` off `a`.
  std::vector<std::vector<int>> Kept(int a, const std::vector<int>& choice, int freed) const;
  // How many candidates Kept(a, choice, freed) keeps per node.
  std::vector<int> KeptSizes(int a, const std::vector<int>& choice, int freed) const;
  // The graph over `kept` and its plan; null when its tables pass the cap.
  std::unique_ptr<Restricted> Restrict(std::vector<std::vector<int>> kept);
  // The restricted graph of the largest cutoff that fits (bisection); null
  // when even the plain one (`plain`: Kept(a, choice, 0)) does not.
  std::unique_ptr<Restricted> Widest(int a, const std::vector<int>& choice,
                                     std::vector<std::vector<int>> plain);

  const CostGraph& graph_;
  AxisLabels labels_;
  int64_t max_entries_;
  int lagrangian_iterations_;
  bool free_nodes_;
  int free_cutoff_ = 0;
  // Free nodes: those of 2+ candidates by count (ties: index), each one's
  // rank there (the others: n), and the ranks where a count ends.
  std::vector<int> order_, rank_, levels_;
  int64_t entries_ = 0;
  std::vector<std::vector<int>> idle_at_;  // per axis: the choice its last idle move kept
  // Cut matrices by (matrix, kept rows, kept columns): identical layers ask
  // for the same cuts.
  std::map<std::tuple<const EdgeMatrix*, std::vector<int>, std::vector<int>>, EdgeMatrixPtr> cut_;
  EliminationWorkspace workspace_;  // every move's solves
};

}  // namespace ofl
