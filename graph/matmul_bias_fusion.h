// Matmul-bias fusion for one-rank ops (graph/distributed_lowering.h): a
// 2-D float32 or float64 `matmul` whose output only a `bias_add` along its
// last axis reads (nn.functional.linear's pair) runs as one `matmul_bias`
// task (ops/math/matmul.cpp), whose CPU kernel passes the bias to oneDNN's
// matmul as its bias argument: one pass over the output instead of two, and
// no register for the product. The task takes the bias_add's place in the
// order (its bias may be computed after the matmul) and the matmul's name;
// its output is the bias_add's, so every later reader is unchanged. The
// product itself is then not a tensor of the plan (not fetchable). Pure
// function of the graph; thread-safe.
#pragma once

#include <cstdint>
#include <vector>

#include "graph/op_graph.h"

namespace ofl {

struct MatmulBiasFusion {
  // By op index: the matmul a bias_add absorbs (-1: none). A fused matmul
  // maps to nothing and is marked in `folded`.
  std::vector<int64_t> absorbs;
  std::vector<bool> folded;
  // The matmul_bias node that replaces bias_add `i` (absorbs[i] >= 0).
  OpNode FusedNode(const OpGraph& graph, int64_t i) const;
  // Nothing fused.
  static MatmulBiasFusion None(const OpGraph& graph) {
    return {std::vector<int64_t>(graph.ops().size(), -1),
            std::vector<bool>(graph.ops().size(), false)};
  }
};

MatmulBiasFusion FindMatmulBias(const OpGraph& graph);

}  // namespace ofl
