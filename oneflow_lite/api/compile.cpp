#include "oneflow_lite/api/compile.h"

#include "oneflow_lite/api/simulated_choice.h"
#include "oneflow_lite/api/strategy_io.h"

namespace ofl {
namespace {

// Random signatures over `stages` equal contiguous runs of the ranks.
Maybe<Strategy> RandomStages(const OpGraph& graph, const Placement& placement, uint64_t seed,
                             int64_t stages) {
  const std::vector<int64_t>& ranks = placement.ranks();
  const int64_t n = static_cast<int64_t>(ranks.size());
  OFL_ENSURE(stages <= n && n % stages == 0, "cannot split ", n, " ranks into ", stages,
             " equal stages");
  std::vector<Placement> placements;
  const int64_t per = n / stages;
  for (int64_t st = 0; st < stages; ++st) {
    OFL_ASSIGN_OR_RETURN(Placement stage,
                         Placement::Create(placement.device_type(),
                                           std::vector<int64_t>(ranks.begin() + st * per,
                                                                ranks.begin() + (st + 1) * per)));
    placements.push_back(stage);
  }
  return RandomPipelineStrategy(graph, placements, seed);
}

}  // namespace

PlanSpec PlanSpec::Deduce(std::map<std::string, NdSbp> pinned) {
  PlanSpec s;
  s.kind = Kind::kDeduce;
  s.pinned = std::move(pinned);
  return s;
}

Maybe<PlanSpec> PlanSpec::Random(int64_t seed, int64_t stages) {
  OFL_ENSURE(stages >= 1 && seed >= 0,
             "strategy: random needs stages >= 1 and seed >= 0, got "
             "stages=",
             stages, " seed=", seed);
  PlanSpec s;
  s.kind = Kind::kRandom;
  s.seed = static_cast<uint64_t>(seed);
  s.stages = stages;
  return s;
}

PlanSpec PlanSpec::Given(Strategy strategy) {
  PlanSpec s;
  s.kind = Kind::kGiven;
  s.strategy = std::move(strategy);
  return s;
}

PlanSpec PlanSpec::Search(PlanRequest request, Cluster cluster) {
  PlanSpec s;
  s.kind = Kind::kSearch;
  s.request = std::move(request);
  s.cluster = std::make_shared<const Cluster>(std::move(cluster));
  return s;
}

std::string PlanSpec::ToString() const {
  switch (kind) {
    case Kind::kDeduce: {
      std::string pins;
      for (const auto& [t, sbp] : pinned)
        pins += (pins.empty() ? "" : ", ") + t + ": " + sbp.ToString();
      return "deduce(" + pins + ")";
    }
    case Kind::kRandom:
      return StrCat("random(seed=", seed, ", stages=", stages, ")");
    case Kind::kGiven:
      return StrCat("given(", strategy.sources().size(), " sources, ", strategy.signatures().size(),
                    " ops)");
    case Kind::kSearch:
      return "search(" + request.searcher + (cluster ? ", " + cluster->name() : "") + ")";
  }
  return "";
}

Maybe<Strategy> StrategyFor(const OpGraph& graph, const Placement& placement,
                            const PlanSpec& spec) {
  switch (spec.kind) {
    case PlanSpec::Kind::kDeduce:
      return DeduceStrategy(graph, placement, spec.pinned);
    case PlanSpec::Kind::kRandom:
      OFL_ENSURE(spec.stages >= 1, "strategy: random needs stages >= 1, got stages=", spec.stages);
      if (spec.stages == 1) return RandomStrategy(graph, placement, spec.seed);
      return RandomStages(graph, placement, spec.seed, spec.stages);
    case PlanSpec::Kind::kGiven:
      return BindStrategy(spec.strategy, placement);
    case PlanSpec::Kind::kSearch:
      break;
  }
  return InvalidArgument("strategy: a search spec plans (Compile), it makes no strategy alone");
}

Maybe<CompiledGraph> Compile(const OpGraph& graph, const Placement& placement, const PlanSpec& spec,
                             const std::vector<std::string>& fetches,
                             const DistributedOptions& options) {
  CompiledGraph compiled;
  if (spec.kind == PlanSpec::Kind::kSearch) {
    OFL_ENSURE(spec.cluster != nullptr, "compile: a search spec needs a cluster");
    PlanRequest request = spec.request;
    request.micro_batches = options.micro_batches;  // costed as the session runs
    PlannedStrategy planned;
    if (spec.simulate_candidates.empty()) {
      OFL_ASSIGN_OR_RETURN(planned, PlanRequested(graph, placement, *spec.cluster, request));
    } else {
      OFL_ASSIGN_OR_RETURN(SimulatedChoice choice,
                           ChooseBySimulation(graph, placement, *spec.cluster, request,
                                              spec.simulate_candidates, fetches, options));
      planned = std::move(choice.chosen);
    }
    compiled.strategy = planned.strategy;
    compiled.planned = std::move(planned);
  } else {
    OFL_ASSIGN_OR_RETURN(compiled.strategy, StrategyFor(graph, placement, spec));
  }
  OFL_ASSIGN_OR_RETURN(compiled.session,
                       DistributedSession::Create(graph, compiled.strategy, fetches, options));
  Maybe<CompiledGraph> out(std::move(compiled));  // move-only: no implicit move into Maybe
  return out;
}

}  // namespace ofl
