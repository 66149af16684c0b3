// Planning facade for the Python binding (DESIGN.md section 2: python -> api):
// plans a strategy with graph/'s PlanStrategy, and adds what a user reads off a
// planned strategy: its report (graph/strategy_report.h), the bytes each rank
// is predicted to send (the boxing planner's per-rank counts over every edge
// that boxes, x the edge's multiplier), and a diff against another strategy
// for the same graph. The Strategy itself crosses to Python typed
// (api/strategy_io.h); compiling with a session is api/compile.h.
//
// Pure functions over value types; thread-safe on const inputs.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "graph/auto_parallel.h"
#include "graph/cost_model_buckets.h"
#include "graph/gradient_buckets.h"
#include "graph/strategy_diff.h"
#include "graph/strategy_report.h"
#include "oneflow_lite/api/memory_estimate.h"

// It is the binding's one door to planning: requests arrive as plain values
// (PlanRequest), are checked here, and clusters are found by name here, so
// python/ calls no function of graph/ or search/ (scripts/check_arrows.py).

namespace ofl {

// A planning request as a binding receives it. PlanOptionsFrom checks it;
// errors name the argument, its value and the allowed range.
struct PlanRequest {
  std::string searcher = "autoddl";
  std::map<std::string, std::string> pinned;  // tensor -> NdSbp text
  int64_t micro_batches = 1;
  std::optional<std::string> compute_dtype;
  std::optional<double> bytes_per_parameter;
  std::optional<int64_t> memory_limit;  // bytes per device; unset: the cluster's; < 0: none
  std::optional<double> exact_time_budget;
  std::optional<int64_t> exact_max_table_entries;
  int autoddl_random_starts = 0;
  bool exact_starts_from_autoddl = true;
  std::optional<double> optimality_cap;          // seconds; unset: the distance is not measured
  std::optional<int64_t> gradient_bucket_bytes;  // unset: CostOptions' default (25 MiB)
  bool overlap_gradients = true;
};
Maybe<PlanOptions> PlanOptionsFrom(const PlanRequest& request);

// The CPU placement of a mesh: `ranks` (default 0 .. n-1) over `hierarchy`
// (the binding's plan(program, hierarchy, ...) form; nn.Graph passes its own
// Placement, device type included).
Maybe<Placement> MeshPlacement(const std::vector<int64_t>& hierarchy,
                               const std::optional<std::vector<int64_t>>& ranks = std::nullopt);

// graph/auto_parallel.h's PlanStrategy, PlanWithModel and cost-model build
// for a checked request.
Maybe<PlannedStrategy> PlanRequested(const OpGraph& graph, const Placement& placement,
                                     const Cluster& cluster, const PlanRequest& request);
Maybe<PlannedStrategy> PlanOnModel(const OpGraph& graph, std::shared_ptr<const CostModel> model,
                                   const PlanRequest& request);
Maybe<std::shared_ptr<const CostModel>> BuildPlanModel(const OpGraph& graph,
                                                       const Placement& placement,
                                                       const Cluster& cluster,
                                                       const PlanRequest& request);
// The searcher names PlanRequest::searcher accepts.
std::vector<std::string> PlanSearchers();

// Clusters: a committed preset, a file, or either (a preset name first; the
// error lists the presets).
Maybe<Cluster> PresetCluster(const std::string& name);
Maybe<Cluster> LoadCluster(const std::string& path);
Maybe<Cluster> FindCluster(const std::string& preset_or_path);
std::vector<std::string> ClusterPresets();
// search/'s CollectiveSeconds for the collective named `kind` ("all_reduce",
// ...) when the busiest rank sends `bytes` in a group of `group_size` ranks
// on level index `level` of `cluster` (its measured points where they hold
// that group size). Errors name a kind, level, bytes or group size out of
// range.
Maybe<double> ClusterCollectiveSeconds(const Cluster& cluster, const std::string& kind,
                                       double bytes, int64_t group_size, int level);

// Global rank -> bytes it sends in one step (all micro-batches) under the
// planned choice. Errors: a boxing that cannot be planned (a bug upstream).
Maybe<std::map<int64_t, int64_t>> PredictedBytesSent(const PlannedStrategy& planned);
// The same for a session that fuses gradients into buckets of
// `gradient_bucket_bytes` (graph/gradient_buckets.h): each bucket counted as
// one all-reduce of its concatenation, its gradients not on their own.
Maybe<std::map<int64_t, int64_t>> PredictedBytesSent(const PlannedStrategy& planned,
                                                     const OpGraph& graph,
                                                     int64_t gradient_bucket_bytes);

// The full step-time model of a planned strategy (graph/cost_model_buckets.h:
// gradient buckets in order of readiness, overlapped with backward).
Maybe<StepEstimate> EstimatePlannedStep(const PlannedStrategy& planned);

// With `memory` (PredictPlannedMemory's answer), the report also shows the
// predicted peak of the busiest rank (StrategyReport::peak_bytes).
Maybe<StrategyReport> ReportPlanned(const OpGraph& graph, const PlannedStrategy& planned,
                                    const MemoryEstimate* memory = nullptr);

// Predicted peak memory per rank of a DistributedSession running the planned
// strategy with `options` and `fetches` (api/memory_estimate.h).
Maybe<MemoryEstimate> PredictPlannedMemory(const OpGraph& graph, const PlannedStrategy& planned,
                                           const std::vector<std::string>& fetches,
                                           const DistributedOptions& options);

// `after` mapped onto `before`'s cost model (CostModel::ChoiceOf), then
// diffed. Errors: `after` has a layout that is no candidate of that model
// (another graph or placement), named.
Maybe<StrategyDiff> DiffPlanned(const PlannedStrategy& before, const PlannedStrategy& after);

}  // namespace ofl
