// Axis-list helpers of the math ops: validating an `axes` attribute and
// inserting size-1 axes into a shape (the keepdims-free form of broadcast_to
// and sum_to, see broadcast.cpp). Pure functions; thread-safe.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "oneflow_lite/core/shape.h"
#include "oneflow_lite/core/status.h"

namespace ofl::math {

inline std::string AxesToString(const std::vector<int64_t>& axes) {
  std::string s = "[";
  for (size_t i = 0; i < axes.size(); ++i) s += (i ? ", " : "") + std::to_string(axes[i]);
  return s + "]";
}

// `axes` mapped into [0, rank) and sorted. `where` prefixes the message,
// `tensor` says which tensor the axes refer to, e.g. "x.shape=(2, 3)".
inline Maybe<std::vector<int64_t>> NormalizeAxes(const std::vector<int64_t>& axes, int64_t rank,
                                                 const std::string& where,
                                                 const std::string& tensor) {
  std::vector<int64_t> out;
  for (size_t i = 0; i < axes.size(); ++i) {
    const int64_t a = axes[i];
    OFL_ENSURE(a >= -rank && a < rank, where, ": axes[", i, "]=", a, " is out of range for ", rank,
               " dims (", tensor, ")");
    const int64_t n = a < 0 ? a + rank : a;
    OFL_ENSURE(std::find(out.begin(), out.end(), n) == out.end(), where,
               ": axes=", AxesToString(axes), " names axis ", n, " twice");
    out.push_back(n);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// `small` brought to `rank` axes: with `axes` (normalised, sorted, and
// small.ndim() + axes.size() == rank) a size-1 axis goes at each of those
// positions; without, leading size-1 axes are added (numpy's alignment).
inline Shape ExpandRank(const Shape& small, int64_t rank, const std::vector<int64_t>& axes) {
  std::vector<int64_t> dims;
  if (axes.empty()) {
    CHECK_LE(small.ndim(), rank);
    dims.assign(rank - small.ndim(), 1);
    dims.insert(dims.end(), small.dims().begin(), small.dims().end());
    return Shape(dims);
  }
  CHECK_EQ(small.ndim() + static_cast<int64_t>(axes.size()), rank);
  int64_t next = 0;
  for (int64_t p = 0; p < rank; ++p) {
    bool inserted = std::binary_search(axes.begin(), axes.end(), p);
    dims.push_back(inserted ? 1 : small[next++]);
  }
  return Shape(dims);
}

// For each of the `rank` axes of ExpandRank's result: the axis of `small` it
// came from, or -1 for an inserted or padded axis.
inline std::vector<int64_t> SourceAxes(int64_t small_ndim, int64_t rank,
                                       const std::vector<int64_t>& axes) {
  std::vector<int64_t> src(rank, -1);
  int64_t next = 0;
  for (int64_t p = 0; p < rank; ++p) {
    bool inserted =
        axes.empty() ? p < rank - small_ndim : std::binary_search(axes.begin(), axes.end(), p);
    if (!inserted) src[p] = next++;
  }
  return src;
}

// Kernel side: the attr's axes normalised against `rank` (validated earlier).
inline std::vector<int64_t> NormalizedAxesUnchecked(const std::vector<int64_t>& axes,
                                                    int64_t rank) {
  std::vector<int64_t> out;
  for (int64_t a : axes) out.push_back(a < 0 ? a + rank : a);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace ofl::math
