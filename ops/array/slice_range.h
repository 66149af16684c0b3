// SliceRanges: python slice semantics per axis (negative start/stop count
// from the end, both are clamped to [0, dim], step >= 1) for the slice and
// slice_grad ops and their kernels. The attrs are validated by the op's
// inference; kernels call this with their local shape, so an axis the slice
// does not touch (start 0, stop >= dim, step 1) may be split. Pure functions.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "oneflow_lite/core/attr.h"
#include "oneflow_lite/core/shape.h"
#include "ops/array/strided_copy.h"

namespace ofl {

struct AxisRange {
  int64_t start = 0;
  int64_t step = 1;
  int64_t size = 0;  // number of elements taken
  bool full(int64_t dim) const { return start == 0 && step == 1 && size == dim; }
};

inline int64_t ClampIndex(int64_t index, int64_t dim) {
  if (index < 0) index += dim;
  return std::clamp<int64_t>(index, 0, dim);
}

// One range per axis of `shape` from the attrs start, stop, step (empty step = all 1).
inline std::vector<AxisRange> SliceRanges(const Shape& shape, const AttrMap& attrs) {
  const auto& start = attrs.Get<std::vector<int64_t>>("start");
  const auto& stop = attrs.Get<std::vector<int64_t>>("stop");
  const auto& step = attrs.Get<std::vector<int64_t>>("step");
  std::vector<AxisRange> ranges(shape.ndim());
  for (int64_t a = 0; a < shape.ndim(); ++a) {
    AxisRange& r = ranges[a];
    r.step = step.empty() ? 1 : step[a];
    r.start = ClampIndex(start[a], shape[a]);
    const int64_t end = ClampIndex(stop[a], shape[a]);
    r.size = end > r.start ? (end - r.start - 1) / r.step + 1 : 0;  // no overflow at a huge step
  }
  return ranges;
}

inline Shape SlicedShape(const std::vector<AxisRange>& ranges) {
  std::vector<int64_t> dims;
  for (const AxisRange& r : ranges) dims.push_back(r.size);
  return Shape(dims);
}

// The sliced block of a tensor (slice and slice_grad, CPU and CUDA) of `shape`: its first element's
// offset and the strides that step through it.
struct SlicedBlockOf {
  int64_t offset = 0;
  std::vector<int64_t> strides;
};

inline SlicedBlockOf SlicedBlock(const Shape& shape, const std::vector<AxisRange>& ranges) {
  const std::vector<int64_t> strides = ContiguousStrides(shape);
  SlicedBlockOf b;
  for (size_t a = 0; a < ranges.size(); ++a) {
    b.offset += ranges[a].start * strides[a];
    b.strides.push_back(strides[a] * ranges[a].step);
  }
  return b;
}

}  // namespace ofl
