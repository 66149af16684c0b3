// Lagrangian branch and bound: exact.h's search under a binding memory
// limit where the graph eliminates. Every subproblem (some nodes' candidates
// restricted to those above or at most a memory threshold) is bounded by its
// Lagrangian dual, max over the memory weight w of min over its assignments
// of cost + w (memory - limit), found exactly by the line-crossing search
// (each solve one elimination, the restricted candidates forbidden by an
// infinite cost); subproblems are opened best bound first. Internal to
// exact.cpp; a pure function of its arguments, safe from several threads
// with their own incumbents.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <vector>

#include "search/cost_graph.h"
#include "search/elimination.h"

namespace ofl {

// One side of the dual: an assignment, its cost (compute plus transfer) and
// per-device memory.
struct DualLine {
  std::vector<int> choice;
  double cost = 0;
  int64_t memory = 0;
};

// The Lagrangian dual of a whole graph (no restriction) by line crossing,
// from a least-memory solve and the weight-0 one. `bound` is the best dual
// value found (valid even when stopped), `over`/`fit` the two envelope lines
// either side of the limit it ended with (`fit` always within the limit when
// `converged` or `fits`); `fits` when the weight-0 optimum keeps the limit.
struct DualAnswer {
  double bound = 0;
  double peak = -std::numeric_limits<double>::infinity();  // this dual's best value
  double weight = 0;                                       // where it was found
  DualLine over, fit;
  bool fits = false;        // then `fit` is the optimum and `bound` its cost
  bool infeasible = false;  // even the least-memory answer breaks the limit
  bool converged = false;
  bool stopped = false;  // `stop` said stop
  int solves = 0;
};

struct LagrangianBranchOptions {
  int64_t max_nodes = int64_t{1} << 14;  // subproblems bounded
  int max_dual_solves = 64;              // per subproblem
  std::function<bool()> stop;            // null: none; asked before each solve
};

struct LagrangianBranchResult {
  bool finished = false;   // the incumbent is proved optimal (to the tolerance)
  double lower_bound = 0;  // no assignment within the limit costs less
  int64_t nodes = 0;       // subproblems bounded
  int64_t solves = 0;      // eliminations run
};

// The root's dual; `seed_over` (if not null) the weight-0 optimum, over the
// limit, already solved; `stop` as in the options.
DualAnswer LagrangianRootDual(const CostGraph& graph, const EliminationPlan& plan,
                              const DualLine* seed_over, int max_solves,
                              const std::function<bool()>& stop);

// Branch and bound below `best_cost` (in/out with `best`, over `graph`; an
// empty `best` and infinity: none yet), from the root's dual `root` (not
// converged: recomputed). Every answer within the limit it meets is
// offered, polished by coordinate descent. Branches on the node whose
// memory differs most between the subproblem's two envelope lines.
LagrangianBranchResult LagrangianBranch(const CostGraph& graph, const EliminationPlan& plan,
                                        const DualAnswer& root, std::vector<int>& best,
                                        double& best_cost, const LagrangianBranchOptions& options);

}  // namespace ofl
