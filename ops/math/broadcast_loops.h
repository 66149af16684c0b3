// Loops shared by the math kernels: iterating a contiguous output while
// reading operands broadcast onto it (numpy rules), and summing a tensor down
// to a shape it was broadcast from. Axes are merged where every operand
// allows it, so (N, C, H, W) + (1, C, 1, 1) runs as (N, C, H*W). Everything
// here works on the local tensors a kernel sees; pure functions, thread-safe.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include "oneflow_lite/core/shape.h"
#include "ops/parallel.h"

namespace ofl::math {

constexpr int kMaxOperands = 3;

// The output's axes after merging, and per operand its element strides along
// them (0 where it is broadcast). There is always at least one axis.
struct BroadcastLayout {
  std::vector<int64_t> dims;
  std::array<std::vector<int64_t>, kMaxOperands> strides;
  int num_operands = 0;
};

// `operands[i]` must broadcast to `out` (right-aligned, each axis 1 or equal);
// the caller validated that, this only CHECKs.
inline BroadcastLayout MakeBroadcastLayout(const Shape& out, const std::vector<Shape>& operands) {
  CHECK_LE(operands.size(), static_cast<size_t>(kMaxOperands));
  const int64_t n = out.ndim();
  const int num = static_cast<int>(operands.size());
  // Per output axis: extent and each operand's contiguous stride (0 when broadcast).
  std::vector<std::array<int64_t, kMaxOperands>> axis_strides(n);
  for (int k = 0; k < num; ++k) {
    const Shape& s = operands[k];
    CHECK_LE(s.ndim(), n);
    int64_t stride = 1;
    for (int64_t a = n - 1; a >= 0; --a) {
      int64_t local = a - (n - s.ndim());
      int64_t d = local >= 0 ? s[local] : 1;
      CHECK(d == 1 || d == out[a]) << "operand " << s << " does not broadcast to " << out;
      axis_strides[a][k] = d == 1 ? 0 : stride;
      stride *= d;
    }
  }
  BroadcastLayout layout;
  layout.num_operands = num;
  for (int64_t a = 0; a < n; ++a) {
    if (out[a] == 1) continue;  // size-1 axes never move an offset
    if (!layout.dims.empty()) {
      // Merge into the previous axis when every operand is contiguous across both.
      bool merge = true;
      for (int k = 0; k < num; ++k) {
        merge = merge && layout.strides[k].back() == axis_strides[a][k] * out[a];
      }
      if (merge) {
        layout.dims.back() *= out[a];
        for (int k = 0; k < num; ++k) layout.strides[k].back() = axis_strides[a][k];
        continue;
      }
    }
    layout.dims.push_back(out[a]);
    for (int k = 0; k < num; ++k) layout.strides[k].push_back(axis_strides[a][k]);
  }
  if (layout.dims.empty()) {
    layout.dims.push_back(1);
    for (int k = 0; k < num; ++k) layout.strides[k].push_back(0);
  }
  return layout;
}

// Calls run(out_offset, operand_offsets, length) for each stretch of output
// elements in [begin, end) along the innermost merged axis; along it operand
// k advances by layout.strides[k].back().
template <typename Run>
void ForEachRun(const BroadcastLayout& layout, int64_t begin, int64_t end, Run&& run) {
  const int64_t d = static_cast<int64_t>(layout.dims.size());
  const int64_t inner = layout.dims.back();
  std::vector<int64_t> index(d);
  int64_t rest = begin;
  for (int64_t a = d - 1; a >= 0; --a) {
    index[a] = rest % layout.dims[a];
    rest /= layout.dims[a];
  }
  int64_t pos = begin;
  while (pos < end) {
    std::array<int64_t, kMaxOperands> offsets{};
    for (int k = 0; k < layout.num_operands; ++k) {
      for (int64_t a = 0; a < d; ++a) offsets[k] += index[a] * layout.strides[k][a];
    }
    int64_t len = std::min(inner - index[d - 1], end - pos);
    run(pos, offsets, len);
    pos += len;
    index[d - 1] += len;
    for (int64_t a = d - 1; a > 0 && index[a] == layout.dims[a]; --a) {
      index[a] = 0;
      ++index[a - 1];
    }
  }
}

// out[...] = scale * sum of x over the axes where `kept` is 1 and x is not.
// `kept` has x's rank, each axis 1 or equal to x's; out holds kept's
// elements, contiguous. Sums accumulate in double, in an order fixed by the
// shapes alone, so the result does not depend on the thread count or the
// instruction set (reduce_sum_to_cpu.cpp; float and double).
template <typename T>
void ReduceSumTo(const T* x, const Shape& x_shape, const Shape& kept, T* out, double scale);

}  // namespace ofl::math
