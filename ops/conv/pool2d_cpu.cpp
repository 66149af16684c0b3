// CPU kernels of max_pool2d, avg_pool2d, max_pool2d_grad and avg_pool2d_grad.
// float32 calls oneDNN (pool2d_onednn.h) except max pooling of an input
// holding NaN (oneDNN drops it); float64, which oneDNN lacks, runs
// plain loops over each window in parallel over the N * C planes
// (ParallelFor). Each plane writes only its own output plane: no races.
// Shapes come from the local tensors, so any N or C shard runs the same
// code; an empty shard does nothing. Stateless.
#include <algorithm>
#include <cmath>

#include "ops/conv/conv_geometry.h"
#include "ops/conv/pool2d_onednn.h"
#include "ops/conv/pool2d_window.h"
#include "ops/kernel.h"
#include "ops/parallel.h"

namespace ofl {

namespace {

// Runs fn(plane) for every plane, in parallel chunks of about kParallelGrain
// window reads.
template <typename Fn>
void ForEachPlane(const Pool2dGeometry& g, Fn fn) {
  const int64_t per_plane = std::max<int64_t>(1, g.out_h * g.out_w * g.window());
  ParallelFor(
      g.planes,
      [&](int64_t begin, int64_t end) {
        for (int64_t p = begin; p < end; ++p) fn(p);
      },
      std::max<int64_t>(1, kParallelGrain / per_plane));
}

template <typename T>
void MaxPool(const T* x, const Pool2dGeometry& g, T* y) {
  ForEachPlane(g, [&](int64_t p) {
    const T* xp = x + p * g.height * g.width;
    T* yp = y + p * g.out_h * g.out_w;
    for (int64_t oh = 0; oh < g.out_h; ++oh) {
      for (int64_t ow = 0; ow < g.out_w; ++ow) {
        *yp++ = xp[PoolArgMax(xp, g, PoolWindowOf(g, oh, ow))];
      }
    }
  });
}

// y is not read: the first position where x equals y is the first maximum,
// which PoolArgMax finds from x alone.
template <typename T>
void MaxPoolBackward(const T* x, const T* dy, const Pool2dGeometry& g, T* dx) {
  ForEachPlane(g, [&](int64_t p) {
    const T* xp = x + p * g.height * g.width;
    const T* dyp = dy + p * g.out_h * g.out_w;
    T* dxp = dx + p * g.height * g.width;
    std::fill(dxp, dxp + g.height * g.width, T(0));
    for (int64_t oh = 0; oh < g.out_h; ++oh) {
      for (int64_t ow = 0; ow < g.out_w; ++ow) {
        dxp[PoolArgMax(xp, g, PoolWindowOf(g, oh, ow))] += *dyp++;
      }
    }
  });
}

// count_include_pad: every window divides by kh * kw (no window reaches past
// the padding because padding <= kernel / 2 and the output size is floored).
template <typename T>
void AvgPool(const T* x, const Pool2dGeometry& g, T* y) {
  const T scale = T(1) / static_cast<T>(g.window());
  ForEachPlane(g, [&](int64_t p) {
    const T* xp = x + p * g.height * g.width;
    T* yp = y + p * g.out_h * g.out_w;
    for (int64_t oh = 0; oh < g.out_h; ++oh) {
      for (int64_t ow = 0; ow < g.out_w; ++ow) {
        const PoolWindow w = PoolWindowOf(g, oh, ow);
        T sum = 0;
        for (int64_t h = w.h_begin; h < w.h_end; ++h) {
          for (int64_t c = w.w_begin; c < w.w_end; ++c) sum += xp[h * g.width + c];
        }
        *yp++ = sum * scale;
      }
    }
  });
}

template <typename T>
void AvgPoolBackward(const T* dy, const Pool2dGeometry& g, T* dx) {
  const T scale = T(1) / static_cast<T>(g.window());
  ForEachPlane(g, [&](int64_t p) {
    const T* dyp = dy + p * g.out_h * g.out_w;
    T* dxp = dx + p * g.height * g.width;
    std::fill(dxp, dxp + g.height * g.width, T(0));
    for (int64_t oh = 0; oh < g.out_h; ++oh) {
      for (int64_t ow = 0; ow < g.out_w; ++ow) {
        const PoolWindow w = PoolWindowOf(g, oh, ow);
        const T v = *dyp++ * scale;
        for (int64_t h = w.h_begin; h < w.h_end; ++h) {
          for (int64_t c = w.w_begin; c < w.w_end; ++c) dxp[h * g.width + c] += v;
        }
      }
    }
  });
}

bool UseOneDnn(const KernelContext& k) {
  return k.in(0).dtype() == DataType::kFloat32 && k.in(0).numel() > 0;
}

// oneDNN's max pooling drops NaN (its max skips it); an input holding one
// takes the loops, which propagate it as np.max does. One scan of x.
bool UseOneDnnMax(const KernelContext& k) {
  if (!UseOneDnn(k)) return false;
  const float* x = k.in(0).data<float>();
  for (int64_t i = 0, n = k.in(0).numel(); i < n; ++i) {
    if (std::isnan(x[i])) return false;
  }
  return true;
}

void MaxPoolKernel(KernelContext& k) {
  const Pool2dGeometry g = PoolGeometryOf(k);
  if (UseOneDnnMax(k)) {
    OneDnnPoolForward(PoolKind::kMax, g, k.in(0).shape()[0], k.in(0).data<float>(),
                      k.out(0).data<float>());
    return;
  }
  OFL_DISPATCH_FLOAT(k.out(0).dtype(), T, MaxPool(k.in(0).data<T>(), g, k.out(0).data<T>()));
}

void AvgPoolKernel(KernelContext& k) {
  const Pool2dGeometry g = PoolGeometryOf(k);
  if (UseOneDnn(k)) {
    OneDnnPoolForward(PoolKind::kAvg, g, k.in(0).shape()[0], k.in(0).data<float>(),
                      k.out(0).data<float>());
    return;
  }
  OFL_DISPATCH_FLOAT(k.out(0).dtype(), T, AvgPool(k.in(0).data<T>(), g, k.out(0).data<T>()));
}

void MaxPoolGradKernel(KernelContext& k) {
  const Pool2dGeometry g = PoolGeometryOf(k);
  if (UseOneDnnMax(k)) {
    OneDnnPoolBackward(PoolKind::kMax, g, k.in(0).shape()[0], k.in(0).data<float>(),
                       k.in(2).data<float>(), k.out(0).data<float>());
    return;
  }
  OFL_DISPATCH_FLOAT(k.out(0).dtype(), T,
                     MaxPoolBackward(k.in(0).data<T>(), k.in(2).data<T>(), g, k.out(0).data<T>()));
}

void AvgPoolGradKernel(KernelContext& k) {
  const Pool2dGeometry g = PoolGeometryOf(k);
  if (UseOneDnn(k)) {
    OneDnnPoolBackward(PoolKind::kAvg, g, k.in(0).shape()[0], nullptr, k.in(1).data<float>(),
                       k.out(0).data<float>());
    return;
  }
  OFL_DISPATCH_FLOAT(k.out(0).dtype(), T,
                     AvgPoolBackward(k.in(1).data<T>(), g, k.out(0).data<T>()));
}

OFL_REGISTER_KERNEL("max_pool2d", DeviceType::kCPU, MaxPoolKernel);
OFL_REGISTER_KERNEL("avg_pool2d", DeviceType::kCPU, AvgPoolKernel);
OFL_REGISTER_KERNEL("max_pool2d_grad", DeviceType::kCPU, MaxPoolGradKernel);
OFL_REGISTER_KERNEL("avg_pool2d_grad", DeviceType::kCPU, AvgPoolGradKernel);

}  // namespace
}  // namespace ofl
