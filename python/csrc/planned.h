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

}  // namespace ofl::python
