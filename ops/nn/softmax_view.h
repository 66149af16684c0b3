// AxisView: a tensor seen as [outer, n, inner] around the axis that softmax
// and log_softmax normalise over (length n). Shared by the CPU and CUDA
// kernels (softmax_cpu.cpp, softmax_cuda.cu). Host code, no CUDA types;
// plain values.
#pragma once

#include <cstdint>

#include "oneflow_lite/core/shape.h"

namespace ofl {

struct AxisView {
  int64_t outer, n, inner;
};

// `axis` may be negative (counted from the end); validated by the op's inference.
inline AxisView ViewAround(const Shape& shape, int64_t axis) {
  if (axis < 0) axis += shape.ndim();
  return {shape.Count(0, axis), shape[axis], shape.Count(axis + 1, shape.ndim())};
}

}  // namespace ofl
