// Exact search: the proven optimum of a CostGraph where the graph allows it,
// by pruning, variable elimination, the Lagrangian dual on memory and two
// branch and bounds (the steps are below). The answer says whether it is
// proved (to a relative 1e-9) and gives the best lower bound known; an
// unproved answer is never worse than the caller's start. Stateless; a const
// CostGraph may be searched from many threads.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "search/autoddl.h"
#include "search/cost_graph.h"

// Exact search: the proven optimum of a CostGraph where the graph allows it.
//   1. Prune dominated candidates (dominance.h; no optimum is lost).
//   2. Variable elimination (elimination.h) in a greedy min-table order:
//      exact in time linear in the nodes times the largest table, so chains,
//      trees and ladders are solved exactly; refused above a size cap.
//   3. If the unconstrained optimum keeps the memory limit, it is optimal.
//      If not, the Lagrangian dual of the limit, max over a weight w >= 0
//      on memory of min over assignments of cost + w (memory - limit), is
//      found exactly by line crossing (lagrangian_branch.h): a proven lower
//      bound; its answer within the limit, polished by coordinate descent,
//      is an upper bound. Equal bounds prove the optimum.
//   4a. Otherwise, where the graph eliminates, a best-first Lagrangian
//      branch and bound (lagrangian_branch.h): each subproblem restricts
//      nodes' candidates to those above or at most a memory threshold and
//      is bounded by its own dual; it branches on the node whose memory
//      differs most between the two answers either side of the limit. It
//      proves the optimum when no open subproblem is below the incumbent
//      within `max_lagrangian_branch_nodes`; else its least open bound is
//      the lower bound.
//   4b. Otherwise (a gap remains, or a graph too wide to eliminate) a depth-
//      first branch and bound over the nodes in breadth-first order, its
//      bound the exact cost so far plus each unassigned node's cheapest
//      candidate against its assigned neighbours and the row minima of the
//      others (under a binding limit also, with memory priced at the best
//      Lagrangian weight, that sum less the limit's worth: whichever is
//      higher); it starts from the best answer so far (the caller's start,
//      options.start, when given; else autoddl's when elimination could not
//      run) and proves it when it finishes within its node budget. So an
//      unproved answer is never worse than the caller's start.
// The answer says whether it is proved (to a relative 1e-9) and gives the
// best lower bound known. Stateless; a const CostGraph may be searched from
// many threads.

namespace ofl {

struct ExactOptions {
  bool prune_dominated = true;
  // One elimination table (2^24 doubles: 128 MiB): a transformer block on
  // [16, 8] needs 1.4e7 entries.
  int64_t max_table_entries = int64_t{1} << 24;
  int64_t max_total_entries = int64_t{1} << 27;  // all tables' argmins (2 bytes each)
  int lagrangian_iterations = 64;
  int64_t max_branch_nodes = int64_t{1} << 20;  // branch-and-bound budget
  // Under a binding limit where the graph eliminates, branch and bound on
  // the Lagrangian dual first (step 4a), within this many subproblems (each
  // a few eliminations); `lagrangian_iterations` caps one dual's solves.
  bool lagrangian_branch = true;
  int64_t max_lagrangian_branch_nodes = int64_t{1} << 14;
  // Under a binding limit, branch and bound also bounds with memory priced
  // at the best Lagrangian weight (exact.h, step 4b). Off: memory ignored.
  bool weighted_branch_bound = true;
  // Wall-clock seconds the Lagrangian dual and the branch and bounds may run
  // together (checked between solves and every 4096 nodes); 0: no limit.
  // Past it the search stops unproved, like max_branch_nodes.
  double time_budget_seconds = 0;
  AutoddlOptions autoddl;  // the start when elimination cannot run and `start` is unset
  // The caller's starting answer (graph/: the whole autoddl pipeline's,
  // presets included), over the graph as given and within its memory limit;
  // an empty choice: none (then the plain autoddl start above, when
  // elimination cannot run). Asked for only when elimination and the
  // Lagrangian bound have not proved the optimum; the best answer so far is
  // then the better of it and exact's own, and branch and bound must beat
  // that. Called at most once, from the searching thread.
  using StartFn = std::function<Maybe<std::vector<int>>()>;
  StartFn start;
};

struct ExactResult {
  Solution solution;  // over the original graph's candidates
  bool proved_optimal = false;
  double lower_bound = 0;  // no assignment within the limit costs less
  // What gave lower_bound: "elimination" (proved without memory binding),
  // "elimination without the memory limit", "Lagrangian bound on memory",
  // "Lagrangian branch and bound (finished)" or "(open subproblems)",
  // "branch-and-bound root bound (memory ignored)" or "(memory at the
  // Lagrangian weight)", "branch and bound (finished)", or "zero (costs are
  // >= 0)".
  std::string bound;
  std::string method;            // what found and proved the answer
  bool answer_is_start = false;  // the answer is options.start's, unimproved
  double start_seconds = -1;     // options.start's total; -1 when not asked for
  std::string note;              // why it is not proved (empty when proved)
  int64_t num_pruned = 0;
  int64_t largest_table = 0;     // of the elimination; 0 when it could not run
  int width = -1;                // most neighbours at an elimination; -1 likewise
  int64_t branch_nodes = 0;      // branch-and-bound nodes visited
  int64_t lagrangian_nodes = 0;  // Lagrangian branch-and-bound subproblems bounded
};

// Errors: an infeasible memory limit (the message gives the smallest
// per-device memory any assignment needs); options.start's error, or a start
// of the wrong length, with an unknown candidate, or over the memory limit.
Maybe<ExactResult> ExactSearch(const CostGraph& graph, const ExactOptions& options = {});

}  // namespace ofl
