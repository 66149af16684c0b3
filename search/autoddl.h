// AutoDDL search: coordinate descent over a CostGraph (DESIGN.md section 6;
// arXiv 2301.06813) from several deterministic feasible starts, with exact
// moves on trees, pairs, mesh axes and small neighbourhoods; every move
// strictly lowers the total, so the result is never worse than its start.
// The best result over the starts wins. The moves and starts are below.
// Stateless functions; a const CostGraph may be searched from many threads.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "search/axis_descent.h"
#include "search/ball_descent.h"
#include "search/cost_graph.h"

// AutoDDL search: coordinate descent over a CostGraph (DESIGN.md section 6;
// arXiv 2301.06813). From each of several deterministic feasible starts,
// visit the nodes in index order (graph/ adds them in topological order);
// give each the candidate that minimises its own compute plus its incident
// edges' transfer times with the neighbours fixed, among the candidates that
// keep the memory limit; sweep until no node changes. Then tree-block
// passes (tree_descent.h: whole forests of nodes re-chosen exactly with the
// rest fixed) and pair passes (pair_descent.h: both ends of an edge
// re-chosen jointly), each round followed by single-node sweeps again,
// until two rounds in a row move nothing. On meshes of 2+ axes, when the
// caller labels each candidate's layout per axis (graph/ does), the best
// few starts' answers then get axis moves (axis_descent.h: one mesh axis
// re-chosen exactly for every node at once, the other axes fixed), each
// followed by the moves above. The best start's answer is then
// polished by ball passes (ball_descent.h: small neighbourhoods re-chosen
// exactly by elimination, within a work budget), each round followed by the
// tree, pair and single-node moves again. Every move strictly lowers the
// total (relative 1e-12), so the result is never worse than its start, and
// it ends where no single node, tree block or pair can improve it. The best result over the
// starts wins (ties: the earlier start). Starts, in this order:
//   "spanning_tree": the exact optimum over a maximum spanning forest (edges
//     weighted by their matrix's spread, the others left out), by
//     elimination; so autoddl is exact on chains and trees. When that
//     optimum breaks the memory limit, a Lagrangian weight on memory is
//     bisected until the forest optimum fits.
//   "greedy": in index order, the cheapest candidate counting edges to the
//     nodes already chosen, within the memory left for the rest.
//   "min_memory": every node's smallest-memory candidate (the cheapest of
//     those).
//   "random_<i>": seeded random feasible choices (options.num_random_starts).
//   then options.extra_starts, under their own names;
//   last "elimination" (only when cheap: options.elimination_max_entries):
//     the exact optimum over the whole graph by variable elimination, under
//     a binding limit the best of a Lagrangian bisection as above. Last, so
//     it wins only where the coordinate descent from the others falls short.
// Dominated candidates (dominance.h) are pruned first unless switched off.
// Stateless functions; a const CostGraph may be searched from many threads.

namespace ofl {

// Choices of a candidate per node, each with a name (starts).
using NamedChoices = std::vector<std::pair<std::string, std::vector<int>>>;

// Small balls under a fixed budget, then the default BallOptions. Out of line:
// a braced list in the member initializer below made GCC 12 warn
// -Wmaybe-uninitialized (a false positive) wherever AutoddlOptions() inlines.
std::vector<BallOptions> DefaultBallTiers();

struct AutoddlOptions {
  int num_random_starts = 0;  // seeded random starts after the three fixed ones
  uint64_t seed = 0;
  int max_sweeps = 1000;  // per start; a safety cap, rarely reached
  bool prune_dominated = true;
  int lagrangian_iterations = 24;  // for the spanning-tree start under a binding limit
  int max_tree_passes = 100;       // per start; 0: only single-node sweeps (DESIGN.md)
  // Each tree pass is followed by a pair pass (pair_descent.h): both ends of
  // every edge re-chosen jointly. Off: the tree passes alone.
  bool pair_moves = true;
  // "Exact when cheap": when variable elimination over the whole (pruned)
  // graph needs at most this many table entries in all, its answer is one
  // more start, "elimination" (the optimum when memory does not bind). 0: off.
  int64_t elimination_max_entries = int64_t{1} << 20;
  // Ball passes (ball_descent.h) polishing the best start's answer, each
  // round followed by tree, pair and single-node moves; 0: none.
  int ball_passes = 4;  // per tier
  // Tiers in turn: small balls under a fixed budget, then the default
  // (large balls, a budget that shrinks with the graph).
  std::vector<BallOptions> ball_tiers = DefaultBallTiers();
  // Axis moves (axis_descent.h) on the answers of the `axis_starts` best
  // starts after their descent, those within `axis_start_slack` (relative)
  // of the best: each hierarchy axis re-chosen exactly over
  // the whole graph with the other axes fixed, each pass that moved followed
  // by the tree, pair and single-node moves; at most `axis_passes` passes.
  // Needs `axis_labels` (graph/ gives them; empty: no axis moves); a
  // restricted graph whose elimination would need more than
  // `axis_max_entries` table entries is skipped. `axis_free_nodes`: in each
  // move the nodes of fewest candidates (weights, small ops) keep all their
  // candidates, as many as the table cap allows (axis_descent.h), so that
  // moves coupling a weight's other axes with the ops' axis are possible.
  AxisLabels axis_labels;
  bool axis_free_nodes = true;
  int axis_starts = 3;
  double axis_start_slack = 0.1;
  int axis_passes = 8;
  int64_t axis_max_entries = int64_t{1} << 22;
  // Extra starts given by the caller (e.g. graph/'s best expert preset), run
  // after the others under their names: choices over the graph as given,
  // each within the memory limit. Descent from one runs on the pruned graph
  // when none of its candidates was pruned, else on the unpruned graph, so
  // the answer is never worse than any of them.
  NamedChoices extra_starts;
  // Block aliasing (block_alias.h): nodes of identical repeated blocks,
  // recognised by `block_rounds` rounds of colour refinement, choose alike;
  // autoddl (without aliasing, without the extra starts) searches that
  // aliased graph, one block's size plus the unrepeated rest, and its answer
  // lifted is one more start, "blocks", before "elimination"; that search's
  // own "elimination" start may use up to `block_max_entries` table entries
  // (when more than elimination_max_entries). 0 rounds: off; also off when
  // no two nodes are alike.
  int block_rounds = 3;
  int64_t block_max_entries = int64_t{1} << 22;
  // Ball passes per tier in that search (at most ball_passes): one keeps
  // GPT 8 layers [128, 8]'s gain and costs 96 layers 1 s of CPU less than 4.
  int block_ball_passes = 1;
};

struct AutoddlStart {
  std::string name;
  double start_seconds = 0;  // the start's total
  double final_seconds = 0;  // after coordinate descent
  int sweeps = 0;            // single-node sweeps
  int64_t moves = 0;         // single-node moves
  int64_t tree_moves = 0;    // tree blocks that moved
  int64_t pair_moves = 0;    // edge pairs that moved
};

struct AutoddlResult {
  Solution solution;  // over the original graph's candidates
  std::vector<AutoddlStart> starts;
  int best_start = 0;
  int64_t num_pruned = 0;     // dominated candidates removed beforehand
  int64_t ball_moves = 0;     // balls that moved while polishing the best start's answer
  int64_t axis_moves = 0;     // axis moves that moved, after the balls
  int64_t aliased_nodes = 0;  // nodes of the aliased graph (0: no aliasing)
};

// Errors: an infeasible memory limit (the message gives the smallest
// per-device memory any assignment needs); an extra start of the wrong
// length, with an unknown candidate, or over the memory limit.
Maybe<AutoddlResult> AutoddlSearch(const CostGraph& graph, const AutoddlOptions& options = {});

// Coordinate descent alone, from `choice` (which must keep the limit);
// returns the sweeps run and counts the moves. Exposed for exact.h, which
// polishes its Lagrangian answers with it, and for tests.
int CoordinateDescent(const CostGraph& graph, std::vector<int>& choice, int max_sweeps,
                      int64_t* moves);

}  // namespace ofl
