// CPU kernels of softmax, log_softmax and their backward ops (softmax.cpp
// registers the ops). The tensor is viewed as [outer, n, inner] around the
// axis of length n (softmax_view.h); work is split into blocks of up to
// kBlock neighbouring inner positions of one outer index, so the loops run
// over contiguous memory whether the axis is last (inner = 1) or not, and
// ParallelFor runs over the blocks. float32 softmax and softmax_grad over
// the last axis take a row path with a vectorised exp or dot product
// (ops/vector_math.h).
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "ops/kernel.h"
#include "ops/nan_compare.h"
#include "ops/nn/softmax_view.h"
#include "ops/parallel.h"
#include "ops/vector_math.h"

namespace ofl {

namespace {

constexpr int64_t kBlock = 64;

// Calls fn(base, width) for every block: the block's elements along the axis
// are base + j * inner + w for j in [0, n), w in [0, width).
template <typename F>
void ForEachBlock(const AxisView& v, F fn) {
  const int64_t blocks_per_outer = (v.inner + kBlock - 1) / kBlock;
  const int64_t num_blocks = v.outer * blocks_per_outer;
  const int64_t block_elems = std::max<int64_t>(1, v.n * std::min(v.inner, kBlock));
  ParallelFor(
      num_blocks,
      [&](int64_t begin, int64_t end) {
        for (int64_t b = begin; b < end; ++b) {
          const int64_t o = b / blocks_per_outer;
          const int64_t i0 = (b % blocks_per_outer) * kBlock;
          fn(o * v.n * v.inner + i0, std::min(kBlock, v.inner - i0));
        }
      },
      std::max<int64_t>(1, kParallelGrain / block_elems));
}

// float32 softmax over the last axis (inner = 1): one contiguous row at a
// time, exp and its sum by ops/vector_math.h; rows split over ParallelFor.
void SoftmaxLastAxis(const AxisView& v, const float* x, float* y) {
  ParallelFor(
      v.outer,
      [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r) {
          const float* xr = x + r * v.n;
          float* yr = y + r * v.n;
          const float scale = 1.0f / vec::ExpShiftedSum(xr, vec::NanMaxOf(xr, v.n), yr, v.n);
          for (int64_t j = 0; j < v.n; ++j) yr[j] *= scale;
        }
      },
      std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(1, v.n)));
}

// log_output: y = x - max - log(sum) instead of exp(x - max) / sum.
template <typename T>
void SoftmaxForward(const Tensor& x_t, Tensor& y_t, int64_t axis, bool log_output) {
  const AxisView v = ViewAround(x_t.shape(), axis);
  const T* x = x_t.data<T>();
  T* y = y_t.data<T>();
  if constexpr (std::is_same_v<T, float>) {
    if (v.inner == 1 && !log_output && v.n > 0) return SoftmaxLastAxis(v, x, y);
  }
  ForEachBlock(v, [&](int64_t base, int64_t width) {
    T max[kBlock], sum[kBlock];
    std::fill(max, max + width, -std::numeric_limits<T>::infinity());
    std::fill(sum, sum + width, T(0));
    for (int64_t j = 0; j < v.n; ++j) {
      const T* row = x + base + j * v.inner;
      for (int64_t w = 0; w < width; ++w) max[w] = NanMax(max[w], row[w]);
    }
    for (int64_t j = 0; j < v.n; ++j) {
      const T* xr = x + base + j * v.inner;
      T* yr = y + base + j * v.inner;
      for (int64_t w = 0; w < width; ++w) {
        T e = std::exp(xr[w] - max[w]);
        sum[w] += e;
        if (!log_output) yr[w] = e;
      }
    }
    for (int64_t w = 0; w < width; ++w) {
      sum[w] = log_output ? max[w] + std::log(sum[w]) : T(1) / sum[w];
    }
    for (int64_t j = 0; j < v.n; ++j) {
      const T* xr = x + base + j * v.inner;
      T* yr = y + base + j * v.inner;
      for (int64_t w = 0; w < width; ++w) {
        yr[w] = log_output ? xr[w] - sum[w] : yr[w] * sum[w];
      }
    }
  });
}

// float32 softmax_grad over the last axis: dx = y * (dy - dot(dy, y)) row by
// row, the dot product by ops/vector_math.h.
void SoftmaxGradLastAxis(const AxisView& v, const float* y, const float* dy, float* dx) {
  ParallelFor(
      v.outer,
      [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r) {
          const int64_t o = r * v.n;
          const float dot = vec::Dot(dy + o, y + o, v.n);
          for (int64_t j = 0; j < v.n; ++j) dx[o + j] = y[o + j] * (dy[o + j] - dot);
        }
      },
      std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(1, v.n)));
}

// softmax: dx = y * (dy - sum(dy * y)); log_softmax: dx = dy - exp(y) * sum(dy).
template <typename T>
void SoftmaxBackward(const Tensor& y_t, const Tensor& dy_t, Tensor& dx_t, int64_t axis,
                     bool log_output) {
  const AxisView v = ViewAround(y_t.shape(), axis);
  const T* y = y_t.data<T>();
  const T* dy = dy_t.data<T>();
  T* dx = dx_t.data<T>();
  if constexpr (std::is_same_v<T, float>) {
    if (v.inner == 1 && !log_output && v.n > 0) return SoftmaxGradLastAxis(v, y, dy, dx);
  }
  ForEachBlock(v, [&](int64_t base, int64_t width) {
    T sum[kBlock];
    std::fill(sum, sum + width, T(0));
    for (int64_t j = 0; j < v.n; ++j) {
      const int64_t r = base + j * v.inner;
      for (int64_t w = 0; w < width; ++w) sum[w] += log_output ? dy[r + w] : dy[r + w] * y[r + w];
    }
    for (int64_t j = 0; j < v.n; ++j) {
      const int64_t r = base + j * v.inner;
      for (int64_t w = 0; w < width; ++w) {
        dx[r + w] =
            log_output ? dy[r + w] - std::exp(y[r + w]) * sum[w] : y[r + w] * (dy[r + w] - sum[w]);
      }
    }
  });
}

KernelFn ForwardKernel(bool log_output) {
  return [log_output](KernelContext& k) {
    const int64_t axis = k.attr().Get<int64_t>("axis");
    OFL_DISPATCH_FLOAT(k.in(0).dtype(), T, SoftmaxForward<T>(k.in(0), k.out(0), axis, log_output));
  };
}

KernelFn BackwardKernel(bool log_output) {
  return [log_output](KernelContext& k) {
    const int64_t axis = k.attr().Get<int64_t>("axis");
    OFL_DISPATCH_FLOAT(k.in(0).dtype(), T,
                       SoftmaxBackward<T>(k.in(0), k.in(1), k.out(0), axis, log_output));
  };
}

}  // namespace

OFL_REGISTER_KERNEL("softmax", DeviceType::kCPU, ForwardKernel(false));
OFL_REGISTER_KERNEL("log_softmax", DeviceType::kCPU, ForwardKernel(true));
OFL_REGISTER_KERNEL("softmax_grad", DeviceType::kCPU, BackwardKernel(false));
OFL_REGISTER_KERNEL("log_softmax_grad", DeviceType::kCPU, BackwardKernel(true));

}  // namespace ofl
