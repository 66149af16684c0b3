// Autodiff: appends the backward graph to an OpGraph, from each op's
// gradient rule (ops/grad.h). Gradients reaching one tensor from several
// consumers are summed with add_n. Only tensors that depend on a trainable
// variable get gradients. Not synchronised.
#pragma once

#include <map>
#include <string>

#include "graph/op_graph.h"

namespace ofl {

// Appends the backward for `seeds` (tensor -> the tensor holding its
// gradient) and returns, for each trainable variable reached, the name of
// its gradient. On error the graph may hold a partial backward: callers
// work on a copy.
Maybe<std::map<std::string, std::string>> AppendBackward(
    OpGraph* graph, const std::map<std::string, std::string>& seeds);

// The usual case: d(loss)/d(loss) = 1 for the graph's loss.
Maybe<std::map<std::string, std::string>> AppendBackwardOfLoss(OpGraph* graph);

}  // namespace ofl
