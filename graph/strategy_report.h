// Strategy report: what a chosen strategy costs, op by op and edge by edge
// (DESIGN.md section 6), from a CostModel and a Solution: each node's
// signature, compute, communication and memory, each boxing edge's steps and
// bytes, the predicted step time, each matmul's bytes beside the SPAA 2022
// lower bound, and (when measured) the distance to the proven optimum. Text
// and JSON. Value types; building one reads the model and the graph only.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "graph/cost_model.h"
#include "graph/op_graph.h"
#include "search/cost_graph.h"

// Strategy report: what a chosen strategy costs, op by op and edge by edge
// (DESIGN.md section 6). From a CostModel (the cost
// graph and its map back to ops, sources and NdSbps) and a Solution (one
// candidate per cost node, search/cost_graph.h):
//  - per cost node (op, source, or variable with its folded update): the
//    chosen signature (or NdSbp), its predicted compute, its communication
//    (the seconds of its incoming edges) and its memory per device;
//  - per edge that moves bytes: the boxing steps (kind, hierarchy axis, bytes
//    of the busiest rank), the busiest rank's bytes over all steps, and the
//    seconds charged (x the edge's multiplier: micro-batches);
//  - the predicted step time (the Solution's total);
//  - per matmul whose second operand is a matrix: the bytes it moves (the
//    boxing into its inputs plus the reduction of a P output, one execution;
//    summed over those boxings, each counted at its busiest rank, so at least
//    what any one rank sends) beside the SPAA 2022 memory-independent lower bound for
//    that m, n, k and P (search/matmul_lower_bound.h), in the same bytes.
//    The bound assumes each rank starts with 1/P of the data: a strategy
//    that keeps an operand replicated (B) can move less than it.
//  - when measured (PlannedStrategy's stats.optimality), the plan's distance
//    to the proven optimum, or at most its distance to the best lower bound
//    (named) when exact found no proof within its stated time cap.
// Text (an aligned table, costliest first; `full` lists every row) and
// JSON. Value types; building one reads the model and the graph only.

namespace ofl {

struct BoxingStepReport {
  std::string kind;             // "ALL_REDUCE", ...
  int64_t hierarchy_axis = -1;  // -1: SEND_RECV over the placements
  int64_t max_bytes = 0;        // busiest rank of this step
};

struct EdgeReport {
  int edge = 0;
  std::string tensor;
  std::string producer;  // cost node names
  std::string consumer;
  std::string from;  // NdSbp produced
  std::string to;    // NdSbp wanted
  std::vector<BoxingStepReport> steps;
  int64_t max_bytes = 0;  // busiest rank over all steps, one execution
  int64_t multiplier = 1;
  double seconds = 0;  // as charged in the total (x multiplier)
};

struct MatmulBoundReport {
  int64_t m = 0, n = 0, k = 0, processors = 0;
  int64_t element_bytes = 0;
  double bytes = 0;  // the strategy's: per boxing its busiest rank, summed; one execution
  double lower_bound_bytes = 0;  // SPAA 2022 words x element_bytes
  std::string bound_case;        // "1d", "2d", "3d"
};

struct NodeReport {
  int node = 0;
  std::string name;
  std::string kind;     // "op", "input", "variable"
  std::string op_type;  // empty for a plain source
  std::string signature;
  double compute_seconds = 0;        // as charged (x multiplier)
  double communication_seconds = 0;  // its incoming edges, as charged
  int64_t memory_bytes = 0;
  double flops = 0;  // busiest rank, one execution
  std::optional<MatmulBoundReport> matmul;
  double seconds() const { return compute_seconds + communication_seconds; }
};

// How far a plan is from the best plan under the cost model: exact ran from
// it (or was the searcher) for at most `cap_seconds`.
struct Optimality {
  double cap_seconds = 0;    // exact's time cap (0: none, only its node budget)
  double seconds = 0;        // what exact took
  bool proved = false;       // bound_seconds is the proven optimum
  double bound_seconds = 0;  // the optimum, or the best lower bound on it
  std::string bound;         // what gave the bound (ExactResult::bound)
  double best_seconds = 0;   // the best plan exact knows (never above the plan's)
  // total / bound - 1: the distance to the optimum (proved), else at most that.
  double Gap(double total_seconds) const;
  std::string ToText(double total_seconds) const;  // one line
  std::string ToJson(double total_seconds) const;  // an object
};

struct StrategyReport {
  std::string cluster;
  std::string placement;
  int64_t micro_batches = 1;
  double total_seconds = 0;  // the predicted step time
  double compute_seconds = 0;
  double transfer_seconds = 0;
  int64_t memory_bytes = 0;  // per device
  int64_t memory_limit_bytes = 0;
  // Per device (each variable at its busiest rank, as memory_bytes): the
  // bytes of every variable an update writes in place (the parameter and its
  // optimizer state, in their stored dtypes), the most that transactional
  // steps' undo copy (runtime/step_undo.h) adds. The runtime keeps it whole
  // only on device ranks, in pipelines and in runs of several iterations; on
  // host ranks it lies over arena bytes dead at the update (one slot) or
  // over the registers' spare slots (two) and adds less: peak_bytes prices
  // it exactly. Not in memory_bytes (the cost model leaves it out).
  int64_t undo_bytes = 0;
  // Set by api/ when asked (api/memory_estimate.h): the predicted peak bytes
  // of the busiest rank of a session running this plan (the runtime's arena
  // with liveness, every buffer kept apart, the undo copy) and that rank's
  // breakdown in words. memory_bytes above stays the searchers' additive
  // proxy (the constraint they search under).
  std::optional<int64_t> peak_bytes;
  std::string peak_text;
  // The full model of the plan (cost_model_buckets.h): gradient collectives
  // in buckets, overlapped with backward; total_seconds is the searchers' proxy.
  double full_seconds = 0;
  int64_t gradient_buckets = 0;
  double gradient_seconds = 0;           // the buckets' seconds, summed
  double exposed_gradient_seconds = 0;   // past the end of backward
  std::optional<Optimality> optimality;  // when measured
  // Set by api/ when asked (api/step_simulation.h): the simulated step of a
  // session running this plan (its very Plan as the runtime runs it) and, by
  // op name, the simulated seconds of that op's tasks on its busiest rank
  // (every act): the ops table's "seconds" column is then this one.
  std::optional<double> simulated_seconds;
  std::map<std::string, double> simulated_op_seconds;
  // The cluster prices compute from a table of measured kernel times; these
  // op types are not in it and were priced by its FLOP/s figure.
  bool compute_table = false;
  std::vector<std::string> untabled_op_types;
  std::vector<NodeReport> nodes;  // costliest first (ties: graph order)
  std::vector<EdgeReport> edges;  // edges that move bytes, costliest first

  // A summary, then the ops table and the edges table; `full` lists every
  // node and edge, otherwise the `max_rows` costliest of each.
  std::string ToText(bool full = false, int max_rows = 20) const;
  std::string ToJson() const;
};

// Errors: a solution whose length is not the model's node count, or a
// candidate index out of range (named).
Maybe<StrategyReport> ReportStrategy(const OpGraph& graph, const CostModel& model,
                                     const Solution& solution);

}  // namespace ofl
