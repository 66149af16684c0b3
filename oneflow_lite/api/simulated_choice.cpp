// The simulated choice of oneflow_lite/api/simulated_choice.h.
#include "oneflow_lite/api/simulated_choice.h"

#include <cstdio>

#include "graph/expert_presets.h"

namespace ofl {

namespace {

std::string Millis(double seconds) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.3f ms", seconds * 1e3);
  return buf;
}

}  // namespace

std::vector<std::string> DefaultSimulationCandidates() { return ExpertPresetNames(); }

std::string SimulatedChoice::ToText() const {
  std::string out = "candidates (additive model in the search; simulated step chooses):\n";
  for (size_t i = 0; i < rows.size(); ++i) {
    const ChoiceRow& r = rows[i];
    if (!r.skipped.empty()) {
      out += StrCat("  ", r.name, ": does not apply (", r.skipped, ")\n");
      continue;
    }
    out +=
        StrCat("  ", r.name, ": additive ", Millis(r.additive_s), ", simulated ",
               Millis(r.simulated_s), static_cast<int>(i) == chosen_row ? " (chosen)" : "", "\n");
  }
  return out;
}

Maybe<SimulatedChoice> ChooseBySimulation(const OpGraph& graph, const Placement& placement,
                                          const Cluster& cluster, const PlanRequest& request,
                                          const std::vector<std::string>& candidates,
                                          const std::vector<std::string>& fetches,
                                          const DistributedOptions& session) {
  OFL_ASSIGN_OR_RETURN(std::shared_ptr<const CostModel> model,
                       BuildPlanModel(graph, placement, cluster, request));
  const StepSimulationOptions simulation = DefaultStepSimulationOptions(cluster);
  SimulatedChoice choice;
  choice.chosen_row = -1;
  std::vector<std::string> names = {request.searcher};
  for (const std::string& c : candidates) {
    if (c != request.searcher) names.push_back(c);
  }
  double best = 0;
  for (size_t i = 0; i < names.size(); ++i) {
    PlanRequest r = request;
    r.searcher = names[i];
    Maybe<PlannedStrategy> planned = PlanOnModel(graph, model, r);
    ChoiceRow row;
    row.name = names[i];
    if (!planned.ok()) {
      if (i == 0) return planned.status();  // the searcher itself must plan
      const std::string message = planned.status().message();
      row.skipped = message.substr(0, message.find('\n'));
      choice.rows.push_back(row);
      continue;
    }
    row.additive_s = planned.value().solution.total_seconds;
    OFL_ASSIGN_OR_RETURN(SimulatedStep step,
                         SimulateSessionStep(graph, planned.value().strategy, fetches, session,
                                             cluster, simulation));
    row.simulated_s = step.run.step_s;
    if (choice.chosen_row < 0 || row.simulated_s < best) {
      best = row.simulated_s;
      choice.chosen_row = static_cast<int>(choice.rows.size());
      choice.chosen = std::move(planned).value();
    }
    choice.rows.push_back(row);
  }
  return choice;
}

}  // namespace ofl
