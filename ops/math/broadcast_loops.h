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
// elements, contiguous. Sums accumulate in double, in a fixed order, so the
// result does not depend on the thread count.
template <typename T>
void ReduceSumTo(const T* x, const Shape& x_shape, const Shape& kept, T* out, double scale) {
  CHECK_EQ(x_shape.ndim(), kept.ndim());
  // Merge the axes into alternating kept / reduced groups (size-1 axes dropped).
  std::vector<int64_t> dims;
  std::vector<bool> reduced;
  for (int64_t a = 0; a < x_shape.ndim(); ++a) {
    CHECK(kept[a] == 1 || kept[a] == x_shape[a]) << kept << " is not reducible from " << x_shape;
    if (x_shape[a] == 1) continue;
    bool r = kept[a] == 1;
    if (!dims.empty() && reduced.back() == r) {
      dims.back() *= x_shape[a];
    } else {
      dims.push_back(x_shape[a]);
      reduced.push_back(r);
    }
  }
  const int64_t num_out = kept.NumElements();
  const int64_t num_x = x_shape.NumElements();
  if (num_out == 0) return;
  if (num_x == 0) {
    std::fill(out, out + num_out, T(0) * static_cast<T>(scale));
    return;
  }
  // x strides of each group; offsets of every combination of the reduced
  // groups (the innermost one excluded when it is reduced: it runs contiguous).
  const int64_t g = static_cast<int64_t>(dims.size());
  std::vector<int64_t> x_stride(g, 1);
  for (int64_t i = g - 2; i >= 0; --i) x_stride[i] = x_stride[i + 1] * dims[i + 1];
  const bool inner_reduced = g > 0 && reduced.back();
  const int64_t inner = g > 0 ? dims.back() : 1;
  std::vector<int64_t> reduced_offsets{0};
  std::vector<int64_t> kept_dims, kept_stride;
  for (int64_t i = 0; i < g; ++i) {
    if (!reduced[i]) {
      kept_dims.push_back(dims[i]);
      kept_stride.push_back(x_stride[i]);
      continue;
    }
    if (i == g - 1) break;
    std::vector<int64_t> next;
    next.reserve(reduced_offsets.size() * dims[i]);
    for (int64_t base : reduced_offsets) {
      for (int64_t j = 0; j < dims[i]; ++j) next.push_back(base + j * x_stride[i]);
    }
    reduced_offsets.swap(next);
  }
  // x offset of output element o (o indexes the kept groups, contiguous).
  auto kept_offset = [&](int64_t o) {
    int64_t off = 0;
    for (int64_t i = static_cast<int64_t>(kept_dims.size()) - 1; i >= 0; --i) {
      off += (o % kept_dims[i]) * kept_stride[i];
      o /= kept_dims[i];
    }
    return off;
  };
  if (inner_reduced) {
    auto sum_one = [&](int64_t base) {
      double s = 0;
      for (int64_t r : reduced_offsets) {
        const T* p = x + base + r;
        for (int64_t j = 0; j < inner; ++j) s += p[j];
      }
      return s;
    };
    if (num_out == 1 && num_x > kParallelGrain) {
      // One output: partial sums over fixed blocks of the contiguous input.
      const int64_t blocks = (num_x + kParallelGrain - 1) / kParallelGrain;
      std::vector<double> partial(blocks);
      ParallelFor(blocks, [&](int64_t b0, int64_t b1) {
        for (int64_t b = b0; b < b1; ++b) {
          double s = 0;
          for (int64_t i = b * kParallelGrain; i < std::min(num_x, (b + 1) * kParallelGrain); ++i) {
            s += x[i];
          }
          partial[b] = s;
        }
      }, 1);
      double s = 0;
      for (double p : partial) s += p;
      out[0] = static_cast<T>(s * scale);
      return;
    }
    const int64_t per_out = num_x / num_out;
    ParallelFor(num_out, [&](int64_t b, int64_t e) {
      for (int64_t o = b; o < e; ++o) out[o] = static_cast<T>(sum_one(kept_offset(o)) * scale);
    }, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(1, per_out)));
    return;
  }
  // Innermost group kept: add whole contiguous rows of x into rows of out.
  const int64_t per_out = num_x / num_out;
  ParallelFor(num_out, [&](int64_t b, int64_t e) {
    std::vector<double> acc;
    for (int64_t o = b; o < e;) {
      int64_t l0 = o % inner;
      int64_t len = std::min(inner - l0, e - o);
      int64_t base = kept_offset(o);
      acc.assign(len, 0.0);
      for (int64_t r : reduced_offsets) {
        const T* p = x + base + r;
        for (int64_t j = 0; j < len; ++j) acc[j] += p[j];
      }
      for (int64_t j = 0; j < len; ++j) out[o + j] = static_cast<T>(acc[j] * scale);
      o += len;
    }
  }, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(1, per_out)));
}

}  // namespace ofl::math
