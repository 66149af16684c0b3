// The pieces of the pooling kernels that the CPU loops (pool2d_cpu.cpp) and
// the CUDA kernels (pool2d_cuda.cu) share, so that both state one contract:
// the geometry of a call from its local tensors, the window an output reads
// and the first maximum of a window. Window and argmax run on the host and
// on the device (ops/host_device.h); no CUDA types. Pure functions.
#pragma once

#include <cstdint>

#include "ops/conv/conv_geometry.h"
#include "ops/host_device.h"
#include "ops/kernel.h"

namespace ofl {

// From k.in(0) (x, NCHW) and the attrs, validated by the op's inference.
inline Pool2dGeometry PoolGeometryOf(const KernelContext& k) {
  Pool2dGeometry g = Pool2dGeometry::Make(k.in(0).shape(), k.attr());
  CHECK(k.in(0).numel() == 0 || (g.out_h >= 1 && g.out_w >= 1)) << k.op_name;
  return g;
}

// The rows [h_begin, h_end) and columns [w_begin, w_end) of x that the window
// of output (oh, ow) covers, with the padding cut away.
struct PoolWindow {
  int64_t h_begin, h_end, w_begin, w_end;
};

OFL_HOST_DEVICE inline PoolWindow PoolWindowOf(const Pool2dGeometry& g, int64_t oh, int64_t ow) {
  const int64_t h0 = oh * g.stride_h - g.pad_h, w0 = ow * g.stride_w - g.pad_w;
  const int64_t h1 = h0 + g.kernel_h, w1 = w0 + g.kernel_w;
  return {h0 > 0 ? h0 : 0, h1 < g.height ? h1 : g.height, w0 > 0 ? w0 : 0,
          w1 < g.width ? w1 : g.width};
}

// Index in the plane x of the first maximum of the window (row-major order),
// or of its first NaN (np.argmax's answer: a NaN is the maximum, so max
// pooling propagates it and its gradient goes to the NaN's position).
// The padding ties with nothing: it never wins. padding <= kernel / 2 keeps
// at least one real element in every window.
template <typename T>
OFL_HOST_DEVICE int64_t PoolArgMax(const T* x, const Pool2dGeometry& g, const PoolWindow& w) {
  int64_t best = w.h_begin * g.width + w.w_begin;
  for (int64_t h = w.h_begin; h < w.h_end; ++h) {
    for (int64_t c = w.w_begin; c < w.w_end; ++c) {
      const T v = x[h * g.width + c];
      if (v != v) return h * g.width + c;  // NaN
      if (v > x[best]) best = h * g.width + c;
    }
  }
  return best;
}

}  // namespace ofl
