// Compile: a logical graph, the placement it runs on and a PlanSpec (how its
// strategy is obtained: searched, given, deduced from pinned tensors, drawn
// at random) to a CompiledGraph in one call: the strategy, the planned
// strategy with its report when one was searched, and the session that runs
// it (its Plan). The placement is the caller's, built once (device type
// included) and passed down; the strategy is validated once, by the
// session's lowering. The Python binding's DistributedSession and compile
// both come here. Pure function over its inputs; the session it returns is
// used from one thread at a time (api/distributed_session.h).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "oneflow_lite/api/distributed_session.h"
#include "oneflow_lite/api/planning.h"

namespace ofl {

struct PlanSpec {
  enum class Kind { kDeduce, kRandom, kGiven, kSearch };
  Kind kind = Kind::kDeduce;
  std::map<std::string, NdSbp> pinned;  // deduce: tensor -> its NdSbp
  uint64_t seed = 0;                    // random
  int64_t stages = 1;                   // random: equal contiguous pipeline stages (>= 1)
  Strategy strategy;                    // given: bound to the placement (BindStrategy)
  PlanRequest request;  // search: searcher, pins, options (micro_batches: the session's)
  std::shared_ptr<const Cluster> cluster;  // search: what it is costed for
  // search: when not empty, the searcher's answer and these candidates (the
  // presets) are each simulated as the session would run them, and the
  // shortest simulated step is chosen (api/simulated_choice.h).
  std::vector<std::string> simulate_candidates;

  static PlanSpec Deduce(std::map<std::string, NdSbp> pinned = {});
  static Maybe<PlanSpec> Random(int64_t seed, int64_t stages = 1);  // checks both
  static PlanSpec Given(Strategy strategy);
  static PlanSpec Search(PlanRequest request, Cluster cluster);
  std::string ToString() const;  // e.g. "random(seed=5, stages=2)"
};

// The strategy a non-search spec gives on `placement` (not yet validated;
// deduced and drawn ones are valid by construction). Errors name the value.
Maybe<Strategy> StrategyFor(const OpGraph& graph, const Placement& placement, const PlanSpec& spec);

struct CompiledGraph {
  Strategy strategy;                            // what the session runs
  std::optional<PlannedStrategy> planned;       // searched: its cost model, stats, report
  std::unique_ptr<DistributedSession> session;  // session->plan(): the lowered Plan
};

// Searches (kSearch, costed for options.micro_batches; chosen by simulated
// step among spec.simulate_candidates too when there are any) or makes the
// strategy, then builds the session with `fetches` and `options` on
// `placement`. Errors: the search's, the spec's, the session's (validation).
Maybe<CompiledGraph> Compile(const OpGraph& graph, const Placement& placement, const PlanSpec& spec,
                             const std::vector<std::string>& fetches,
                             const DistributedOptions& options);

}  // namespace ofl
