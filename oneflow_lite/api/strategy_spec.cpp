#include "oneflow_lite/api/strategy_spec.h"

#include "oneflow_lite/api/compile.h"
#include "oneflow_lite/api/strategy_io.h"

namespace ofl {

Maybe<Strategy> MakeStrategy(const OpGraph& graph, const Placement& placement,
                             const StrategySpec& spec) {
  if (spec.kind == "deduce") {
    OFL_ASSIGN_OR_RETURN(Strategy pins, StrategyFromText(spec.pinned, {}));
    return StrategyFor(graph, placement, PlanSpec::Deduce(pins.sources()));
  }
  if (spec.kind == "random") {
    OFL_ENSURE(spec.stages >= 1, "strategy: random needs stages >= 1, got stages=", spec.stages);
    PlanSpec random;
    random.kind = PlanSpec::Kind::kRandom;
    random.seed = spec.seed;
    random.stages = spec.stages;
    return StrategyFor(graph, placement, random);
  }
  if (spec.kind == "manual") {
    return StrategyFromText(spec.sources, spec.signatures, placement);
  }
  return InvalidArgument("unknown strategy kind '", spec.kind,
                         "' (expected deduce, random or manual)");
}

}  // namespace ofl
