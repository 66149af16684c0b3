// float32 pooling through oneDNN (forward, and backward for max and avg),
// used by pool2d_cpu.cpp; float64 stays on the loops there, which are also
// the reference these are tested against through the op table. Max-pool
// backward reruns the forward to get oneDNN's workspace (the argmax of each
// window), since the graph's backward op does not keep the forward's.
// Thread-safe: primitives are cached and run with per-thread scratchpads.
#pragma once

#include "ops/conv/conv_geometry.h"

namespace ofl {

enum class PoolKind { kMax, kAvg };

void OneDnnPoolForward(PoolKind kind, const Pool2dGeometry& g, int64_t batch, const float* x,
                       float* y);
// max: needs x (to recompute the workspace); avg: x may be null.
void OneDnnPoolBackward(PoolKind kind, const Pool2dGeometry& g, int64_t batch, const float* x,
                        const float* dy, float* dx);

}  // namespace ofl
