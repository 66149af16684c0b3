// Auto-parallel planning: builds the cost model (cost_model.h), runs the
// searcher options.searcher names (graph/searcher.h: a registry of searchers,
// one file each under graph/searchers/, with their options) and turns its
// choice back into a Strategy (DESIGN.md section 6). Pinned NdSbps are
// honoured by every built-in searcher; pipeline stages and micro-batch counts
// are inputs (options.stages, options.cost.micro_batches), nothing here
// searches them. Stateless functions; thread-safe on const inputs.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "graph/cost_model.h"
#include "graph/searcher_options.h"
#include "graph/strategy_report.h"
#include "search/autoddl.h"

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
  // Every searcher but "exact" (which measures its own): when > 0, exact
  // runs from the chosen plan, under exact's options (ExactSearcherOptions)
  // and options.pinned, for at most this many seconds (its Lagrangian and
  // branch and bound; pruning and elimination come first) and
  // PlanStats::optimality says how far the plan is from the proven optimum,
  // or at most from the best lower bound. 0: not measured.
  double optimality_cap_seconds = 0;
  // Each searcher's own options by type, e.g.
  // searcher_options.Mutable<AutoddlSearcherOptions>() (graph/searchers/).
  SearcherOptions searcher_options;
};

struct PlanStats {
  int64_t ops = 0;  // OpGraph ops: forward, backward, updates
  int64_t cost_nodes = 0;
  int64_t cost_edges = 0;
  double mean_candidates = 0;                // per cost node
  double mean_op_candidates = 0;             // per op node (and folded update): signatures per op
  int64_t pruned = 0;                        // dominated candidates the searcher removed
  double build_seconds = 0;                  // cost model
  double search_seconds = 0;                 // searcher (presets included) + conversion
  double seconds = 0;                        // in-memory graph to Strategy
  bool exact_proved = false;                 // "exact" only
  double lower_bound = 0;                    // "exact" only
  std::string autoddl_start;                 // "autoddl": the start whose result was kept
  std::vector<AutoddlStart> autoddl_starts;  // "autoddl": every start, before and after descent
  double exact_start_seconds = -1;       // "exact": autoddl's total it started from; -1: none asked
  std::optional<Optimality> optimality;  // "exact", or options.optimality_cap_seconds > 0
  std::string note;                      // e.g. why exact did not prove, which preset was used
};

struct PlannedStrategy {
  std::string searcher;
  Strategy strategy;                       // passes Strategy::Validate
  Solution solution;                       // over model->graph()
  std::shared_ptr<const CostModel> model;  // what it was costed with
  PlanStats stats;
};

// The registered searchers' names, in listing order (graph/searcher.h).
std::vector<std::string> SearcherNames();

// Builds the cost model and plans. Errors: an unknown searcher (listing the
// registered names), a preset that does not apply (saying why), a bad pin, an
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
