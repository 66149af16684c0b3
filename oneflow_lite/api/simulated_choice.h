// The search's final choice by the simulated step (DESIGN.md section 6,
// "two prices of a step"): the searcher (autoddl) keeps its fast additive
// model inside its loop; its answer and the other candidates (the expert
// presets) are then planned on the same cost model, each lowered and
// simulated as the session would run it (api/step_simulation.h), and the
// one with the shortest simulated step is chosen (ties: the earlier; the
// searcher's answer comes first). Every candidate's two figures are kept for
// the report. A candidate that does not apply (a preset whose rule does not
// fit the model or mesh) is listed with why.
// Pure function over value types; thread-safe on const inputs.
#pragma once

#include <string>
#include <vector>

#include "oneflow_lite/api/planning.h"
#include "oneflow_lite/api/step_simulation.h"

namespace ofl {

struct ChoiceRow {
  std::string name;        // the searcher or preset
  double additive_s = 0;   // the searchers' additive total
  double simulated_s = 0;  // the simulated step
  std::string skipped;     // why it does not apply; empty when planned
};

struct SimulatedChoice {
  PlannedStrategy chosen;
  int chosen_row = 0;           // index into rows
  std::vector<ChoiceRow> rows;  // request.searcher first, then `candidates` in order
  // "autoddl: additive 1.2 ms, simulated 1.5 ms (chosen)" per row.
  std::string ToText() const;
};

// The default candidates: the rule-based expert presets
// (graph/expert_presets.h ExpertPresetNames).
std::vector<std::string> DefaultSimulationCandidates();

// Plans request.searcher and each of `candidates` on one cost model of
// (graph, placement, cluster), simulates each as a DistributedSession with
// `session` and `fetches` would run it, and chooses by the simulated step.
// Errors: the request's own searcher failing (a bad pin, no strategy fits
// memory), a lowering or simulation error.
Maybe<SimulatedChoice> ChooseBySimulation(const OpGraph& graph, const Placement& placement,
                                          const Cluster& cluster, const PlanRequest& request,
                                          const std::vector<std::string>& candidates,
                                          const std::vector<std::string>& fetches,
                                          const DistributedOptions& session);

}  // namespace ofl
