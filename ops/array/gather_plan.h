// GatherPlan: gather and gather_grad over a contiguous x (or dx) and index
// seen as (outer, axis, inner): index element (o, k, i) names x element
// (o, index[o, k, i], i). Shared by the CPU and CUDA kernels. Pure; thread-safe.
#pragma once

#include <cstdint>

#include "oneflow_lite/core/shape.h"

namespace ofl {

struct GatherPlan {
  int64_t outer = 1;
  int64_t index_len = 1;   // index.shape[axis]
  int64_t values_len = 1;  // x.shape[axis]
  int64_t inner = 1;
};

inline GatherPlan MakeGatherPlan(const Shape& values, const Shape& index, int64_t axis) {
  if (axis < 0) axis += values.ndim();
  GatherPlan p;
  for (int64_t a = 0; a < axis; ++a) p.outer *= values[a];
  for (int64_t a = axis + 1; a < values.ndim(); ++a) p.inner *= values[a];
  p.index_len = index[axis];
  p.values_len = values[axis];
  return p;
}

}  // namespace ofl
