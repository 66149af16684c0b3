// Lowering: from an OpGraph to the Plan the runtime executes. This first
// version places everything on one device (rank 0, one stream): a register
// per logical tensor, a SOURCE task per fed input, a VARIABLE task per
// variable and a COMPUTE task per op, in graph order, one slot per register,
// and ctrl edges that make every in-place update act after the other
// readers of the variable it writes (PlanBuilder::AddInPlaceCtrlEdges).
// api/Session runs it on the actor runtime as a one-rank plan; the
// distributed lowering (SBP, boxing, several ranks) is
// graph/distributed_lowering.h. Pure function.
#pragma once

#include "graph/op_graph.h"
#include "oneflow_lite/core/proto/plan.pb.h"

namespace ofl {

Maybe<proto::Plan> LowerSingleDevice(const OpGraph& graph);

}  // namespace ofl
