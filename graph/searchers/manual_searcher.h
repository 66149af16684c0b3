// The "manual" searcher's options: the user's own strategy, costed as given.
// Without one, "manual" deduces the strategy from the pinned NdSbps
// (DeduceStrategy: every op's signature follows its inputs). Value type.
#pragma once

#include "graph/strategy.h"

namespace ofl {

struct ManualSearcherOptions {
  // Its signatures and source NdSbps when it has any, else DeduceStrategy
  // from PlanOptions::pinned.
  Strategy strategy;
};

}  // namespace ofl
