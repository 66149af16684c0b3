// Planning facade for the Python binding (DESIGN.md section 2: python ->
// api): plans a strategy with graph/'s PlanStrategy, and adds what a user
// reads off a planned strategy: its report (graph/strategy_report.h), the
// bytes each rank is predicted to send (the boxing planner's per-rank
// counts over every edge that boxes, x the edge's multiplier), a diff
// against another strategy for the same graph, and the Strategy as the
// "manual" form DistributedSession accepts (sources and signatures as text).
// Pure functions over value types; thread-safe on const inputs.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "graph/auto_parallel.h"
#include "graph/strategy_diff.h"
#include "graph/strategy_report.h"

namespace ofl {

// Global rank -> bytes it sends in one step (all micro-batches) under the
// planned choice. Errors: a boxing that cannot be planned (a bug upstream).
Maybe<std::map<int64_t, int64_t>> PredictedBytesSent(const PlannedStrategy& planned);

Maybe<StrategyReport> ReportPlanned(const OpGraph& graph, const PlannedStrategy& planned);

// `after` mapped onto `before`'s cost model (CostModel::ChoiceOf), then
// diffed. Errors: `after` has a layout that is no candidate of that model
// (another graph or placement), named.
Maybe<StrategyDiff> DiffPlanned(const PlannedStrategy& before, const PlannedStrategy& after);

// The manual form: source tensor -> NdSbp text, op -> signature text.
struct StrategyText {
  std::map<std::string, std::string> sources;
  std::map<std::string, std::string> signatures;
};
StrategyText ToStrategyText(const Strategy& strategy);

}  // namespace ofl
