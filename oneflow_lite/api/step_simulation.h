// The simulated step of a session (DESIGN.md section 6, "two prices of a
// step"): lowers a strategy into the very Plan DistributedSession::Create
// runs, prices every task from the Cluster (graph/plan_task_cost.h) and
// simulates one run (graph/plan_simulation.h); also the predicted timeline
// as a Chrome trace in the runtime's format, to join with a measured one.
// Pure functions over value types; thread-safe on const inputs.
#pragma once

#include <string>
#include <vector>

#include "graph/op_graph.h"
#include "graph/plan_simulation.h"
#include "graph/plan_task_cost.h"
#include "graph/strategy.h"
#include "graph/strategy_report.h"
#include "oneflow_lite/api/distributed_session.h"
#include "search/cluster.h"

// The simulated step of a session (DESIGN.md section 6, "two prices of a
// step"): lowers a strategy into the very Plan DistributedSession::Create
// runs (graph/distributed_lowering.h with the session's slots,
// micro-batches and gradient buckets), prices every task from the Cluster
// (graph/plan_task_cost.h) and simulates one run of it
// (graph/plan_simulation.h). Also the predicted timeline as a Chrome trace
// in the runtime's format (runtime/trace.h: pid = rank, tid = stream,
// args.task = task id), so that it opens beside a measured trace and joins
// with it task by task. It lives in api/ because it uses graph/ (lowering,
// simulation) and runtime/ (the runtime's task names).
// Pure functions over value types; thread-safe on const inputs.

namespace ofl {

struct StepSimulationOptions {
  TaskCostOptions cost;
  // Thread time per act and message latency between threads; iterations
  // are the session's micro-batches (set by SimulateSessionStep).
  SimulationOptions simulation;
};

// The options used when the caller gives none. Overheads of this runtime's
// actors on a CPU host, read off traces of small plans (explain's rows):
// 4 us of thread time per act, 10 us per message between threads, 20 us per
// boxing act, 1 us per copy kernel. The memory bandwidth of ops without
// FLOPs from the cluster: with a kernel table that lists relu (float32; its
// FLOPs are its elements, each read and written: 8 bytes), the bandwidth
// relu reached at its largest measured size; else the float32 FLOP/s over
// 20 FLOP per byte (the balance of current accelerators: H100 67 TFLOP/s and
// 3.35 TB/s, V100 15.7 TFLOP/s and 0.9 TB/s).
StepSimulationOptions DefaultStepSimulationOptions(const Cluster& cluster);

struct SimulatedStep {
  proto::Plan plan;
  std::vector<std::string> task_names;  // the runtime's, by task id
  std::vector<TaskCost> costs;          // by task id
  SimulatedRun run;
};

// One run (options.micro_batches iterations) of the session
// DistributedSession::Create(graph, strategy, fetches, options) would
// build. Errors: what the lowering refuses, a task the pricing cannot price.
Maybe<SimulatedStep> SimulateSessionStep(const OpGraph& graph, const Strategy& strategy,
                                         const std::vector<std::string>& fetches,
                                         const DistributedOptions& options, const Cluster& cluster,
                                         const StepSimulationOptions& simulation);

// Whether a session's step of `strategy` is small enough to simulate in a
// report by the way: ops x ranks at most kReportSimulationBudget (about the
// plan's tasks; a 96-layer GPT on 1,024 devices has millions, which a
// report must not wait for; SimulateSessionStep itself has no limit).
constexpr int64_t kReportSimulationBudget = 200000;
bool SimulationAffordable(const OpGraph& graph, const Strategy& strategy);

// A plan simulated with other task times (a replay with measured ones).
Maybe<SimulatedRun> ReplayPlan(const proto::Plan& plan, const std::vector<double>& task_seconds,
                               const SimulationOptions& options);

// Fills report->simulated_seconds (the step) and simulated_op_seconds (per
// op name: its COMPUTE tasks' simulated seconds, every act, on the rank
// where they sum highest; an update "update/<var>" under its variable's
// name, as the report's folded node).
void AddSimulationToReport(const SimulatedStep& step, StrategyReport* report);

// The predicted timeline as Chrome trace JSON: one "X" event per act
// (pid = rank, tid = stream, microseconds), args: task, act, category,
// wait_us (a collective's wait for its peers); process and thread names.
std::string SimulatedTraceJson(const SimulatedStep& step);

}  // namespace ofl
