// StrategySpec: a Strategy for DistributedSession described by plain values
// (C++ callers and tests): deduced from pinned NdSbps, drawn at random (over
// `stages` equal pipeline stages when > 1), or written by hand ("manual":
// source NdSbps and op signatures as text). MakeStrategy parses it into
// api/compile.h's PlanSpec and makes the strategy there; errors name the
// tensor, the op or the value. A manual strategy is validated by the session
// that runs it (once). Pure; thread-safe on const inputs.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "graph/op_graph.h"
#include "graph/strategy.h"
#include "oneflow_lite/core/placement.h"

namespace ofl {

struct StrategySpec {
  std::string kind = "deduce";                    // deduce, random or manual
  std::map<std::string, std::string> pinned;      // deduce: tensor -> NdSbp text
  uint64_t seed = 0;                              // random
  int64_t stages = 1;                             // random: pipeline stages
  std::map<std::string, std::string> sources;     // manual: tensor -> NdSbp text
  std::map<std::string, std::string> signatures;  // manual: op -> "... -> ..."
};

Maybe<Strategy> MakeStrategy(const OpGraph& graph, const Placement& placement,
                             const StrategySpec& spec);

}  // namespace ofl
