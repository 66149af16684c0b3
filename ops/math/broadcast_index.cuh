// BroadcastIndex: math::BroadcastLayout (broadcast_loops.h) in a form a CUDA
// kernel takes by value, and the per-element operand offsets it gives. Used
// by the elementwise binary ops and broadcast_to. Header-only; CUDA sources.
#pragma once

#include "ops/cuda_device.cuh"
#include "ops/math/broadcast_loops.h"

namespace ofl::cuda {

struct BroadcastIndex {
  Dims dims;                         // the output's merged axes
  Dims strides[math::kMaxOperands];  // per operand, 0 where broadcast
};

inline BroadcastIndex ToBroadcastIndex(const math::BroadcastLayout& layout) {
  BroadcastIndex index;
  index.dims = ToDims(layout.dims);
  for (int k = 0; k < layout.num_operands; ++k) index.strides[k] = ToDims(layout.strides[k]);
  return index;
}

// Offset in operand k of output element i.
__device__ __forceinline__ int64_t OperandOffset(const BroadcastIndex& index, int k, int64_t i) {
  return OffsetOf(i, index.dims, index.strides[k]);
}

}  // namespace ofl::cuda
