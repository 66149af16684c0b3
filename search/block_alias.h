// Block aliasing: identical repeated blocks (the layers of a transformer),
// recognised from the cost graph's structure (colour refinement, never
// names), made to choose alike. The aliased graph has one node per class of
// identical nodes; its total for a class choice equals the original total of
// that choice copied to every member, so solving it searches exactly the
// plans in which identical blocks choose identically; autoddl's `blocks`
// start searches it (BlocksStart). Value types, not synchronised;
// BlocksStart is a pure function of its arguments.
#pragma once

#include <cstdint>
#include <vector>

#include "search/autoddl.h"
#include "search/axis_descent.h"
#include "search/cost_graph.h"

// Block aliasing: identical repeated blocks (the layers of a transformer),
// recognised from the cost graph's structure, made to choose alike. Nodes
// are coloured by refinement (Weisfeiler-Lehman): first by their candidate
// list (compute and memory of every candidate, and each candidate's axis
// labels when given), then, for `rounds` rounds, by their colour with the
// multiset of (edge matrix by content, direction, neighbour's colour) of
// their edges. Names never enter: two layers' matmuls with the same shapes,
// layouts and surroundings get one colour; nodes within `rounds` edges of
// where the repetition ends (the first and last layer beside the embedding
// and the head) get colours of their own. A class is the nodes of one
// colour; every member has the same candidates.
// The aliased graph has one node per class, whose candidate c stands for
// every member taking c: its compute and memory are the members' sums, an
// edge inside a class adds its diagonal to that compute, and the edges
// between two classes add up into one matrix. So the aliased total of a
// class choice equals the original total of its lift (up to rounding):
// solving the aliased graph searches exactly the plans in which identical
// blocks choose identically, on a graph the size of one block plus the
// unrepeated rest (solving identical layers once). A lifted answer is a
// restriction, never better than the original optimum; autoddl descends
// from it on the original graph (autoddl.h).
// Value types; not synchronised.

namespace ofl {

struct NodeClasses {
  std::vector<int> of;                    // per node: its class
  std::vector<std::vector<int>> members;  // per class: its nodes, ascending
  // Nodes in classes of two or more members.
  int64_t repeated_nodes() const;
};

// `labels` may be empty (no axis labels); else as AxisLabels::usable.
NodeClasses StructuralClasses(const CostGraph& graph, const AxisLabels& labels, int rounds);

class AliasedGraph {
 public:
  // The aliased graph of `graph` (which must outlive it) under `classes`,
  // with `graph`'s memory limit; `labels` (empty or usable on `graph`)
  // become the aliased graph's, each class taking its first member's.
  AliasedGraph(const CostGraph& graph, NodeClasses classes, const AxisLabels& labels);

  const CostGraph& graph() const { return aliased_; }
  const AxisLabels& labels() const { return labels_; }
  const NodeClasses& classes() const { return classes_; }
  // A choice per class as a choice per original node.
  std::vector<int> Lift(const std::vector<int>& class_choice) const;
  // The class choice of `choice`: each class takes its first member's
  // candidate (`choice` need not choose alike within a class).
  std::vector<int> Project(const std::vector<int>& choice) const;

 private:
  NodeClasses classes_;
  CostGraph aliased_;
  AxisLabels labels_;
};

// autoddl's `blocks` start (autoddl.h): the aliased graph of `graph` (the
// pruned graph autoddl searches; `labels` empty or usable on it) solved,
// lifted. First cutset conditioning (cutset.h) within
// `options.block_max_entries`, its answer when exact; else autoddl over the
// aliased graph (without aliasing, `block_ball_passes` ball passes) from its
// own starts and from `given` (the caller's starts on `graph`) projected
// onto the classes, those that fit the limit: the block move from each,
// since a start searched on the whole graph only changes one layer at a
// time. Empty when no two nodes are alike or the search fails; counts the
// aliased graph's nodes in `aliased_nodes`.
std::vector<int> BlocksStart(const CostGraph& graph, const AxisLabels& labels,
                             const AutoddlOptions& options, const NamedChoices& given,
                             int64_t* aliased_nodes);

}  // namespace ofl
