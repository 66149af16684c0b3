// Lowering: from an OpGraph to the Plan the runtime executes. This first
// version places everything on one device (rank 0, one stream): a register
// per logical tensor, a SOURCE task per fed input, a VARIABLE task per
// variable and a COMPUTE task per op, in graph order. The distributed
// lowering (SBP, boxing, several ranks) replaces it. Pure function.
#pragma once

#include "graph/op_graph.h"
#include "oneflow_lite/core/proto/plan.pb.h"

namespace ofl {

Maybe<proto::Plan> LowerSingleDevice(const OpGraph& graph);

}  // namespace ofl
