#include "oneflow_lite/api/planning.h"

#include <set>

namespace ofl {

Maybe<std::map<int64_t, int64_t>> PredictedBytesSent(const PlannedStrategy& planned) {
  OFL_ENSURE(planned.model != nullptr, "planned strategy '", planned.searcher,
             "' has no cost model");
  const CostModel& model = *planned.model;
  const std::vector<int>& choice = planned.solution.choice;
  std::map<int64_t, int64_t> bytes;
  for (int64_t rank : model.placements().placement().ranks()) bytes[rank] = 0;
  // Lowering boxes a tensor once per (placement, wanted NdSbp), however many
  // consumers want it so (graph/distributed_lowering.cpp); count it once too.
  // (The cost graph's edges still charge each consumer: a pairwise model.)
  std::set<std::string> boxed;
  for (int e = 0; e < model.graph().num_edges(); ++e) {
    const CostEdgeInfo& info = model.edges()[e];
    const int pc = choice[info.producer];
    const int cc = choice[info.consumer];
    const Placement& to = model.nodes()[info.consumer].placement;
    if (model.ProducedSbp(e, pc) == model.WantedSbp(e, cc) &&
        model.nodes()[info.producer].placement == to) {
      continue;
    }
    if (!boxed.insert(info.tensor + "|" + to.ToString() + "|" + model.WantedSbp(e, cc).ToString())
             .second) {
      continue;
    }
    OFL_ASSIGN_OR_RETURN(BoxingPlan plan, model.EdgeBoxing(e, pc, cc));
    for (const auto& [rank, sent] : plan.bytes_sent) bytes[rank] += sent * info.multiplier;
  }
  return bytes;
}

Maybe<StrategyReport> ReportPlanned(const OpGraph& graph, const PlannedStrategy& planned) {
  OFL_ENSURE(planned.model != nullptr, "planned strategy '", planned.searcher,
             "' has no cost model");
  OFL_ASSIGN_OR_RETURN(StrategyReport report,
                       ReportStrategy(graph, *planned.model, planned.solution));
  report.optimality = planned.stats.optimality;
  return report;
}

Maybe<StrategyDiff> DiffPlanned(const PlannedStrategy& before, const PlannedStrategy& after) {
  OFL_ENSURE(before.model != nullptr && after.model != nullptr,
             "strategy diff: a planned strategy has no cost model");
  std::vector<int> after_choice = after.solution.choice;
  if (after.model != before.model) {
    OFL_ASSIGN_OR_RETURN(after_choice, before.model->ChoiceOf(after.strategy));
  }
  return DiffStrategies(*before.model, before.solution.choice, after_choice);
}

StrategyText ToStrategyText(const Strategy& strategy) {
  StrategyText text;
  for (const auto& [tensor, sbp] : strategy.sources()) text.sources[tensor] = sbp.ToString();
  for (const auto& [op, sig] : strategy.signatures()) text.signatures[op] = sig.ToString();
  return text;
}

}  // namespace ofl
