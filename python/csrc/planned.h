// The Python PlannedStrategy: a planned strategy with the graph it was
// planned for (a copy: the program may change afterwards), and what the
// planning bindings share: a Cluster or a placement from their Python
// arguments, and the binders of planning.cpp's parts (planned.cpp,
// cost_model.cpp, strategy_types.cpp); simulation.cpp adds the simulate
// method. Called with the GIL held.
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "convert.h"
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

// A Cluster, a preset name or a file path (planning.cpp); TypeError otherwise.
Cluster ClusterFrom(const py::object& cluster);
// A _C.Placement as it is, or a hierarchy (list) over `ranks` (default
// 0 .. n-1) of CPU devices (planning.cpp).
Placement MeshOf(const py::object& placement_or_hierarchy,
                 const std::optional<std::vector<int64_t>>& ranks);

void BindPlanned(py::module_& m);    // planned.cpp
void BindCostModel(py::module_& m);  // cost_model.cpp

}  // namespace ofl::python
