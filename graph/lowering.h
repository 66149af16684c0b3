// Lowering: from an OpGraph to the Plan the runtime executes, on one device
// (rank 0, one stream): a register per logical tensor, a SOURCE task per fed
// input, a VARIABLE task per variable and a COMPUTE task per op, in graph
// order, one slot per register, and ctrl edges that make every in-place
// update act after the other readers of the variable it writes
// (PlanBuilder::AddInPlaceCtrlEdges). A matmul read only by a bias_add runs
// as one matmul_bias task (graph/matmul_bias_fusion.h) unless
// options.fuse_matmul_bias is off. api/Session runs it as a one-rank plan;
// the distributed lowering is graph/distributed_lowering.h. Pure function.
#pragma once

#include "graph/op_graph.h"
#include "oneflow_lite/core/proto/plan.pb.h"

namespace ofl {

struct SingleDeviceOptions {
  bool fuse_matmul_bias = true;  // graph/matmul_bias_fusion.h
};

Maybe<proto::Plan> LowerSingleDevice(const OpGraph& graph, const SingleDeviceOptions& options = {});

}  // namespace ofl
