// The Python PlannedStrategy: a planned strategy with the graph it was
// planned for (a copy: the program may change afterwards). Bound in
// planning.cpp; simulation.cpp adds its simulate method.
#pragma once

#include <memory>

#include "oneflow_lite/api/planning.h"

namespace ofl::python {

struct PyPlanned {
  std::shared_ptr<const OpGraph> graph;
  PlannedStrategy planned;
};

// The strategy report of `p` (memory: predicted_memory's answer, shown as
// the peak) with the simulated step of a default session and its per-op
// simulated seconds as the time column (simulation.cpp); without them when
// the plan cannot be simulated or is past SimulationAffordable (the report
// then says nothing of it).
StrategyReport SimulatedReport(const PyPlanned& p, const MemoryEstimate* memory);

}  // namespace ofl::python
