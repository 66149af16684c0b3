// Auto-parallel planning: builds the cost model (cost_model.h), runs one
// searcher and turns its Solution back into a Strategy (DESIGN.md section 6).
// Searchers: "autoddl" and "exact" (search/), the rule-based expert presets
// "data_parallel", "megatron", "2d", "zero", "vgg" (expert_presets.h: every
// source and op by the expert's rule, nothing searched), the source presets
// "data_parallel_sources", "megatron_sources", "2d_sources", "vgg_sources"
// (sources by the rule, the ops' signatures then chosen cost-optimally), and
// "manual" (options.manual as given, or deduced from the pinned NdSbps).
//
// Stateless functions; thread-safe on const inputs.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "graph/cost_model.h"
#include "graph/strategy_report.h"
#include "search/autoddl.h"
#include "search/exact.h"

// Pinned NdSbps are honoured by every searcher: a pinned source (or op output)
// keeps only the candidates that produce it. "autoddl" also starts from the
// best applicable expert preset's choice, so it is never worse than its own
// starts nor than that preset (of either family), and from each "replicate one
// mesh axis" optimum. "exact" starts from "autoddl"'s answer when elimination
// does not prove its own, so it is never worse than autoddl. Pipeline stages
// and micro-batch counts are inputs (options.stages,
// options.cost.micro_batches); nothing here searches them.

namespace ofl {

struct PlanOptions {
  std::string searcher = "autoddl";
  // Source tensors (inputs, variables) or op outputs -> the NdSbp they must have.
  std::map<std::string, NdSbp> pinned;
  CostOptions cost;  // micro-batches, compute dtype, bytes per parameter, memory limit
  // Pipeline stages: when not empty, AssignStages(graph, stages,
  // stage_boundaries) sets the placements (the `placement` argument is then
  // the default for anything AssignStages leaves).
  std::vector<Placement> stages;
  std::vector<int64_t> stage_boundaries;
  // "manual": this strategy's signatures and source NdSbps when it has any,
  // else DeduceStrategy from `pinned`.
  Strategy manual;
  // "autoddl": also start from the best applicable expert preset.
  bool autoddl_starts_from_presets = true;
  // "autoddl": also start, for each hierarchy axis, from the best choice that
  // replicates that axis (the problem on the other axes alone: a plan for
  // [8] is one for [2, 8] with the outer axis B, which descent from the
  // built-in starts does not always find).
  bool autoddl_starts_from_submeshes = true;
  // "exact": when elimination does not prove the optimum, start from the
  // "autoddl" answer (presets and per-axis starts included), so an unproved
  // exact is never worse than autoddl; replaces exact's plain autoddl start.
  bool exact_starts_from_autoddl = true;
  // Every searcher but "exact" (which measures its own): when > 0, exact
  // runs from the chosen plan, under options.exact and options.pinned, for at
  // most this many seconds (its Lagrangian and branch and bound; pruning and
  // elimination come first) and PlanStats::optimality says how far the plan
  // is from the proven optimum, or at most from the best lower bound. 0: not
  // measured.
  double optimality_cap_seconds = 0;
  AutoddlOptions autoddl;
  ExactOptions exact;
};

struct PlanStats {
  int64_t ops = 0;  // OpGraph ops: forward, backward, updates
  int64_t cost_nodes = 0;
  int64_t cost_edges = 0;
  double mean_candidates = 0;     // per cost node
  double mean_op_candidates = 0;  // per op node (and folded update): signatures per op
  int64_t pruned = 0;             // dominated candidates the searcher removed
  double build_seconds = 0;       // cost model
  double search_seconds = 0;      // searcher (presets included) + conversion
  double seconds = 0;             // in-memory graph to Strategy
  bool exact_proved = false;      // "exact" only
  double lower_bound = 0;         // "exact" only
  std::string autoddl_start;      // "autoddl": the start whose result was kept
  std::vector<AutoddlStart> autoddl_starts;  // "autoddl": every start, before and after descent
  double exact_start_seconds = -1;  // "exact": autoddl's total it started from; -1: none asked
  std::optional<Optimality> optimality;  // "exact", or options.optimality_cap_seconds > 0
  std::string note;               // e.g. why exact did not prove, which preset was used
};

struct PlannedStrategy {
  std::string searcher;
  Strategy strategy;                       // passes Strategy::Validate
  Solution solution;                       // over model->graph()
  std::shared_ptr<const CostModel> model;  // what it was costed with
  PlanStats stats;
};

// The valid searcher names, in the order above.
std::vector<std::string> SearcherNames();

// Builds the cost model and plans. Errors: an unknown searcher (listing the
// valid names), a preset that does not apply (saying why), a bad pin, an
// infeasible memory limit (the smallest need and the limit in GiB).
Maybe<PlannedStrategy> PlanStrategy(const OpGraph& graph, const Placement& placement,
                                    const Cluster& cluster, const PlanOptions& options = {});

// Plans with a model already built for `graph` (reuse it across searchers;
// options.cost and options.stages are then ignored: the model's hold).
Maybe<PlannedStrategy> PlanWithModel(const OpGraph& graph, std::shared_ptr<const CostModel> model,
                                     const PlanOptions& options = {});

// The placements PlanStrategy costs with: `placement`, then options.stages.
Maybe<Strategy> PlacementsFor(const OpGraph& graph, const Placement& placement,
                              const PlanOptions& options);

// Per node, the candidates that keep `fixed` (sources or op outputs ->
// NdSbp); empty = all. Errors name the tensor and NdSbp no candidate keeps.
Maybe<std::vector<std::vector<int>>> AllowedCandidates(const OpGraph& graph, const CostModel& model,
                                                       const std::map<std::string, NdSbp>& fixed);

}  // namespace ofl
