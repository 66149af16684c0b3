#include "oneflow_lite/api/strategy_spec.h"

#include <vector>

#include "ops/nd_sbp.h"

namespace ofl {
namespace {

Maybe<std::map<std::string, NdSbp>> ParseNdSbps(const std::map<std::string, std::string>& texts) {
  std::map<std::string, NdSbp> out;
  for (const auto& [tensor, text] : texts) {
    auto parsed = NdSbp::Parse(text);
    OFL_ENSURE(parsed.ok(), "tensor '", tensor, "': ", parsed.status().message());
    out[tensor] = parsed.value();
  }
  return out;
}

Maybe<Strategy> RandomStages(const OpGraph& graph, const Placement& placement,
                             const StrategySpec& spec) {
  const std::vector<int64_t>& ranks = placement.ranks();
  const int64_t n = static_cast<int64_t>(ranks.size());
  OFL_ENSURE(spec.stages <= n && n % spec.stages == 0, "cannot split ", n, " ranks into ",
             spec.stages, " equal stages");
  std::vector<Placement> placements;
  const int64_t per = n / spec.stages;
  for (int64_t st = 0; st < spec.stages; ++st) {
    OFL_ASSIGN_OR_RETURN(Placement stage,
                         Placement::Create(DeviceType::kCPU,
                                           std::vector<int64_t>(ranks.begin() + st * per,
                                                                ranks.begin() + (st + 1) * per)));
    placements.push_back(stage);
  }
  return RandomPipelineStrategy(graph, placements, spec.seed);
}

}  // namespace

Maybe<Strategy> MakeStrategy(const OpGraph& graph, const Placement& placement,
                             const StrategySpec& spec) {
  if (spec.kind == "deduce") {
    OFL_ASSIGN_OR_RETURN(auto pinned, ParseNdSbps(spec.pinned));
    return DeduceStrategy(graph, placement, pinned);
  }
  if (spec.kind == "random") {
    OFL_ENSURE(spec.stages >= 1, "strategy: random needs stages >= 1, got stages=", spec.stages);
    if (spec.stages == 1) return RandomStrategy(graph, placement, spec.seed);
    return RandomStages(graph, placement, spec);
  }
  if (spec.kind == "manual") {
    Strategy s(placement);
    OFL_ASSIGN_OR_RETURN(auto sources, ParseNdSbps(spec.sources));
    for (const auto& [tensor, sbp] : sources) s.SetSourceSbp(tensor, sbp);
    for (const auto& [op, text] : spec.signatures) {
      auto sig = NdSbpSignature::Parse(text);
      OFL_ENSURE(sig.ok(), "op '", op, "': ", sig.status().message());
      s.SetSignature(op, sig.value());
    }
    OFL_RETURN_IF_ERROR(s.Validate(graph));
    return s;
  }
  return InvalidArgument("unknown strategy kind '", spec.kind,
                         "' (expected deduce, random or manual)");
}

}  // namespace ofl
