// The typed strategy artifacts' binding (strategy_types.cpp), shared with the
// bindings that take or give them (planning, distributed): a Strategy loaded
// from a file, and the PlanSpec a session's `strategy` argument stands for.
// Called with the GIL held.
#pragma once

#include <string>

#include "convert.h"
#include "oneflow_lite/api/compile.h"

namespace ofl::python {

// The strategy of a saved file (any form api/strategy_io.h reads).
Strategy LoadStrategy(const std::string& path);
// None -> deduce with no pins; a PlanSpec as it is; a Strategy -> given.
// TypeError otherwise.
PlanSpec SpecOf(const py::object& strategy);
void BindStrategyTypes(py::module_& m);

}  // namespace ofl::python
