// Elimination: min-sum variable elimination over a CostGraph, the exact core of
// search/ (used by exact.h, and by autoddl.h on a spanning forest). Nodes are
// eliminated one at a time in a greedy order (the node whose neighbours' table,
// the product of their candidate counts, is smallest); eliminating x builds a
// table over its neighbours holding the best cost of x for each of their
// assignments, plus the argmin for the way back. Chains and trees never need a
// table over more than one node; a ladder needs two. The plan refuses graphs
// whose tables would pass a size cap.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "search/cost_graph.h"

// Make() also lays out the symbolic part of every elimination (scopes, strides,
// which factors meet), which does not depend on the memory weight, so that
// Solve() only does the arithmetic (the autoddl starts and exact's Lagrangian
// dual and branch and bound call it many times per plan). Its buffers live in an
// EliminationWorkspace: a caller that solves again and again (the Lagrangian
// search, the axis and ball moves) passes one and allocates almost nothing
// after the first solve. A plan points at its graph, which must outlive it.
// Solve() is const and reentrant; a workspace belongs to one caller (thread)
// at a time, and any plan may use any workspace.

namespace ofl {

// Solve()'s reusable buffers (the unary costs, the tables, the argmins, the
// factor copies). Keeps what it grew to, plus up to 2^23 entries of freed
// tables' buffers for the next tables.
class EliminationWorkspace {
 public:
  EliminationWorkspace();
  ~EliminationWorkspace();
  EliminationWorkspace(EliminationWorkspace&&) noexcept;
  EliminationWorkspace& operator=(EliminationWorkspace&&) noexcept;
  struct Buffers;  // elimination.cpp's

 private:
  friend class EliminationPlan;
  std::unique_ptr<Buffers> buffers_;
};

class EliminationPlan {
 public:
  // `use_edge[e]` == 0 leaves edge e out (empty: every edge). Errors
  // (kUnimplemented) when one table would hold more than
  // `max_table_entries`, or all of them together more than
  // `max_total_entries`.
  static Maybe<EliminationPlan> Make(const CostGraph& graph, std::vector<char> use_edge,
                                     int64_t max_table_entries, int64_t max_total_entries);

  // Whether Make would accept a graph with `graph`'s edges (all of them)
  // whose node u has sizes[u] candidates, under the same caps, without
  // building that graph (axis moves probe many restrictions).
  static bool Fits(const CostGraph& graph, const std::vector<int>& sizes, int64_t max_table_entries,
                   int64_t max_total_entries);

  int64_t largest_table() const { return largest_table_; }
  int64_t total_entries() const { return total_entries_; }
  int width() const { return width_; }  // the most neighbours a node had when eliminated

  // The assignment minimising sum(compute + memory_weight * memory) plus the
  // used edges' transfer times; `objective` (if not null) gets that minimum.
  // Ties go to the lower candidate index.
  std::vector<int> Solve(double memory_weight, double* objective) const;
  // The same, giving up once `stop` returns true (asked before each
  // elimination and every 2^16 entries of a table): then an empty assignment.
  std::vector<int> Solve(double memory_weight, double* objective,
                         const std::function<bool()>& stop) const;
  // The same, in `workspace`'s buffers (the answer is the same bit for bit).
  std::vector<int> Solve(double memory_weight, double* objective,
                         EliminationWorkspace& workspace) const;
  // The same with `unary_extra` (if not null; one entry per candidate, the
  // nodes in index order) added to the candidates' costs: +infinity forbids a
  // candidate (exact's Lagrangian branch and bound fixes nodes so); `stop`
  // (if not null) as above.
  std::vector<int> Solve(double memory_weight, double* objective, EliminationWorkspace& workspace,
                         const double* unary_extra, const std::function<bool()>* stop) const;
  // The compute plus the used edges' transfer of `choice` (no memory term):
  // the plan's objective at weight 0.
  double Cost(const std::vector<int>& choice) const;

 private:
  // One elimination: x's factors (edges: ids below the edge count; tables
  // built by earlier steps: the rest) summed with its unary and minimised
  // over x for every assignment of its scope (last position fastest). The
  // per-step lists live in the pools below, at the offsets given.
  struct Step {
    int x = 0;
    int m = 0;   // scope nodes: scope_[scope_at..], their K in sizes_
    int nf = 0;  // input factors: inputs_[input_at..], x's strides in x_stride_
    int64_t scope_at = 0;
    int64_t input_at = 0;
    int64_t stride_at = 0;      // scope_stride_: per input and scope position; 0 where absent
    int64_t total = 1;          // table entries: the product of the scope's K
    int64_t argmin_offset = 0;  // into Solve()'s argmin arena
    int output = -1;            // the table's factor id when it spans 2+ nodes
  };
  // The greedy order (smallest table first, then fewest candidates, then
  // index) over the used edges, with node u's K taken as sizes[u], into
  // `order`; its largest table, total and width into this plan. Errors as
  // Make.
  Status Order(const CostGraph& graph, const std::vector<char>& use_edge,
               const std::vector<int>& sizes, int64_t max_table_entries, int64_t max_total_entries,
               std::vector<int>* order);
  // Lays out steps_ for order_ (the symbolic half of Solve()).
  void Compile();
  std::vector<int> SolveUntil(double memory_weight, double* objective,
                              const std::function<bool()>* stop,
                              EliminationWorkspace::Buffers& buffers,
                              const double* unary_extra = nullptr) const;
  // One step's table into `table` and its argmins into `arg`; false when
  // `stop` said stop.
  bool SolveStep(const Step& step, const double* unary, double* table, uint16_t* arg,
                 const std::function<bool()>* stop, EliminationWorkspace::Buffers& buffers) const;

  EliminationPlan() = default;
  const CostGraph* graph_ = nullptr;
  std::vector<char> use_edge_;
  std::vector<int> order_;
  std::vector<Step> steps_;  // per position of order_
  std::vector<int> scope_, inputs_;
  std::vector<int64_t> sizes_, x_stride_, scope_stride_;
  std::vector<const double*> edge_data_;  // factor id -> an edge matrix's data
  int num_factors_ = 0;                   // edge factors and built tables
  std::vector<int64_t> unary_offset_;     // per node, into Solve()'s unary arena; n + 1
  int64_t small_table_ = 0;               // the largest table of a step with scope <= 1
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

// The optimum of `plan`'s problem within `graph`'s memory limit when it
// fits; else the Lagrangian relaxation of the limit, searched over the
// memory weight w: plan.Solve(w) minimises cost(x) + w * memory(x), a lower
// envelope of lines in w whose memory falls as w grows. From a pair of
// answers on either side of the limit (w = 0, over it; the decisive weight,
// within it), each solve is at the weight where their two lines cross: an
// answer below both lines there is a new line between them, which replaces
// the one on its side of the limit; none means the two are adjacent on the
// envelope, and the one within the limit is the envelope's cheapest answer
// that fits. At most `iterations` solves after the first two (a geometric
// bisection needed them all; this typically needs a few). Every answer that
// fits is offered, and the cheapest over the whole graph wins. Empty when
// even the decisive weight does not fit (the plan leaves edges out, so its
// least-memory answer is one). Used by autoddl's starts and axis moves.
// `workspace` (if not null) holds the solves' buffers.
std::vector<int> LagrangianSolve(const CostGraph& graph, const EliminationPlan& plan,
                                 int iterations, EliminationWorkspace* workspace = nullptr);

}  // namespace ofl
