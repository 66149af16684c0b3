// ReduceWalk: the element offsets of a reduction over some axes of a
// contiguous tensor, for the kernels that reduce with something other than a
// sum (reduce_any, reduce_all, argmax, argmin). Output element o reads the
// elements OffsetOf(o, kept_dims, kept_strides) + OffsetOf(r, reduced_dims,
// reduced_strides) for r in [0, num_reduced), in row-major order of the
// reduced axes (so r is the index along the axis when one axis is reduced).
// Pure; thread-safe.
#pragma once

#include <cstdint>
#include <vector>

#include "oneflow_lite/core/shape.h"

namespace ofl::math {

struct ReduceWalk {
  std::vector<int64_t> kept_dims, kept_strides;        // x's strides of the kept axes
  std::vector<int64_t> reduced_dims, reduced_strides;  // and of the reduced ones
  int64_t num_kept = 1;
  int64_t num_reduced = 1;
};

// `axes`: sorted, distinct, in [0, x.ndim()).
inline ReduceWalk MakeReduceWalk(const Shape& x, const std::vector<int64_t>& axes) {
  ReduceWalk w;
  std::vector<int64_t> strides(x.ndim(), 1);
  for (int64_t a = x.ndim() - 2; a >= 0; --a) strides[a] = strides[a + 1] * x[a + 1];
  size_t next = 0;
  for (int64_t a = 0; a < x.ndim(); ++a) {
    const bool reduced = next < axes.size() && axes[next] == a;
    if (reduced) ++next;
    (reduced ? w.reduced_dims : w.kept_dims).push_back(x[a]);
    (reduced ? w.reduced_strides : w.kept_strides).push_back(strides[a]);
    (reduced ? w.num_reduced : w.num_kept) *= x[a];
  }
  return w;
}

// The offset of flat row-major index i of `dims` under `strides`.
inline int64_t OffsetOf(int64_t i, const std::vector<int64_t>& dims,
                        const std::vector<int64_t>& strides) {
  int64_t offset = 0;
  for (int64_t a = static_cast<int64_t>(dims.size()) - 1; a >= 0; --a) {
    offset += (i % dims[a]) * strides[a];
    i /= dims[a];
  }
  return offset;
}

}  // namespace ofl::math
