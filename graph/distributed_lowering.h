// Distributed lowering: an OpGraph and a Strategy become the Plan the actor
// runtime executes on every rank of the strategy's placement (DESIGN.md
// sections 1, 5, 7). Per rank: a SOURCE task per fed input and a VARIABLE
// task per variable holding its slice, a COMPUTE task per op on stream 0 with
// physical shapes from slicing, BOXING tasks (graph/boxing_tasks.h, stream 1)
// wherever a consumer needs another NdSbp than its producer made (one boxing
// per (tensor, target NdSbp), shared by its consumers), SINK tasks for the
// fetched tensors, and ctrl edges that make every in-place update act after
// all other readers of the variable it writes. Every register of a logical
// tensor records its logical shape, offset and NdSbp, so the caller can
// slice feeds and variables and assemble fetches. Pure function.
#pragma once

#include <string>
#include <vector>

#include "graph/strategy.h"
#include "oneflow_lite/core/proto/plan.pb.h"

namespace ofl {

struct LoweringOptions {
  int64_t num_slots = 2;  // slots of non-persistent registers: 2 overlaps iterations
};

Maybe<proto::Plan> LowerDistributed(const OpGraph& graph, const Strategy& strategy,
                                    const std::vector<std::string>& fetches,
                                    const LoweringOptions& options = {});

}  // namespace ofl
