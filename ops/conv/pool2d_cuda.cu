// CUDA kernels of max_pool2d, avg_pool2d, max_pool2d_grad and avg_pool2d_grad:
// our own kernels rather than cuDNN's pooling, because the ops' contract is
// the CPU loops' (pool2d_cpu.cpp) and cuDNN's does not state it: the first
// maximum of a window in row-major order wins ties, a NaN is the maximum
// (np.argmax), and the backward passes are deterministic. Forward: one
// thread per output element. Backward: a gather, one thread per input
// element, summing the dy of every window that covers it in the windows'
// row-major order (the CPU's order of +=), so there are no atomics; max
// pooling first writes each window's argmax to scratch. Shapes come from the
// local tensors (Pool2dGeometry).
#include "ops/conv/conv_geometry.h"
#include "ops/cuda_device.cuh"
#include "ops/cuda_util.h"

namespace ofl {

namespace {

// The window of output (oh, ow) with the padding cut away.
struct Window {
  int64_t h_begin, h_end, w_begin, w_end;
};

__device__ Window WindowOf(const Pool2dGeometry& g, int64_t oh, int64_t ow) {
  const int64_t h0 = oh * g.stride_h - g.pad_h, w0 = ow * g.stride_w - g.pad_w;
  return {h0 > 0 ? h0 : 0, min(h0 + g.kernel_h, g.height), w0 > 0 ? w0 : 0,
          min(w0 + g.kernel_w, g.width)};
}

// Index in the plane of the window's first maximum, or of its first NaN.
template <typename T>
__device__ int64_t ArgMax(const T* x, const Pool2dGeometry& g, const Window& w) {
  int64_t best = w.h_begin * g.width + w.w_begin;
  for (int64_t h = w.h_begin; h < w.h_end; ++h) {
    for (int64_t c = w.w_begin; c < w.w_end; ++c) {
      const T v = x[h * g.width + c];
      if (cuda::IsNan(v)) return h * g.width + c;
      if (v > x[best]) best = h * g.width + c;
    }
  }
  return best;
}

// The output rows (or columns) whose windows cover input row `h`: [lo, hi].
__device__ void Covering(int64_t h, int64_t kernel, int64_t stride, int64_t pad, int64_t out,
                         int64_t* lo, int64_t* hi) {
  const int64_t first = h + pad - kernel + 1;
  *lo = first <= 0 ? 0 : (first + stride - 1) / stride;
  *hi = min((h + pad) / stride, out - 1);
}

template <typename T>
__global__ void MaxPoolForward(Pool2dGeometry g, const T* x, T* y) {
  const int64_t per_plane = g.out_h * g.out_w;
  OFL_KERNEL_LOOP(o, g.planes * per_plane) {
    const int64_t p = o / per_plane, oh = (o % per_plane) / g.out_w, ow = o % g.out_w;
    const T* xp = x + p * g.height * g.width;
    y[o] = xp[ArgMax(xp, g, WindowOf(g, oh, ow))];
  }
}

template <typename T>
__global__ void MaxPoolArgMax(Pool2dGeometry g, const T* x, int64_t* argmax) {
  const int64_t per_plane = g.out_h * g.out_w;
  OFL_KERNEL_LOOP(o, g.planes * per_plane) {
    const int64_t p = o / per_plane, oh = (o % per_plane) / g.out_w, ow = o % g.out_w;
    argmax[o] = ArgMax(x + p * g.height * g.width, g, WindowOf(g, oh, ow));
  }
}

template <typename T>
__global__ void MaxPoolBackward(Pool2dGeometry g, const int64_t* argmax, const T* dy, T* dx) {
  const int64_t plane = g.height * g.width, per_plane = g.out_h * g.out_w;
  OFL_KERNEL_LOOP(i, g.planes * plane) {
    const int64_t p = i / plane, at = i % plane, h = at / g.width, w = at % g.width;
    int64_t oh0, oh1, ow0, ow1;
    Covering(h, g.kernel_h, g.stride_h, g.pad_h, g.out_h, &oh0, &oh1);
    Covering(w, g.kernel_w, g.stride_w, g.pad_w, g.out_w, &ow0, &ow1);
    T sum = 0;
    for (int64_t oh = oh0; oh <= oh1; ++oh) {
      for (int64_t ow = ow0; ow <= ow1; ++ow) {
        const int64_t o = p * per_plane + oh * g.out_w + ow;
        if (argmax[o] == at) sum += dy[o];
      }
    }
    dx[i] = sum;
  }
}

// count_include_pad: every window divides by kh * kw.
template <typename T>
__global__ void AvgPoolForward(Pool2dGeometry g, const T* x, T* y) {
  const int64_t per_plane = g.out_h * g.out_w;
  const T scale = T(1) / static_cast<T>(g.kernel_h * g.kernel_w);
  OFL_KERNEL_LOOP(o, g.planes * per_plane) {
    const int64_t p = o / per_plane, oh = (o % per_plane) / g.out_w, ow = o % g.out_w;
    const T* xp = x + p * g.height * g.width;
    const Window w = WindowOf(g, oh, ow);
    T sum = 0;
    for (int64_t h = w.h_begin; h < w.h_end; ++h) {
      for (int64_t c = w.w_begin; c < w.w_end; ++c) sum += xp[h * g.width + c];
    }
    y[o] = sum * scale;
  }
}

template <typename T>
__global__ void AvgPoolBackward(Pool2dGeometry g, const T* dy, T* dx) {
  const int64_t plane = g.height * g.width, per_plane = g.out_h * g.out_w;
  const T scale = T(1) / static_cast<T>(g.kernel_h * g.kernel_w);
  OFL_KERNEL_LOOP(i, g.planes * plane) {
    const int64_t p = i / plane, at = i % plane, h = at / g.width, w = at % g.width;
    int64_t oh0, oh1, ow0, ow1;
    Covering(h, g.kernel_h, g.stride_h, g.pad_h, g.out_h, &oh0, &oh1);
    Covering(w, g.kernel_w, g.stride_w, g.pad_w, g.out_w, &ow0, &ow1);
    T sum = 0;
    for (int64_t oh = oh0; oh <= oh1; ++oh) {
      for (int64_t ow = ow0; ow <= ow1; ++ow) sum += dy[p * per_plane + oh * g.out_w + ow] * scale;
    }
    dx[i] = sum;
  }
}

Pool2dGeometry Geometry(const KernelContext& k) {
  Pool2dGeometry g = Pool2dGeometry::Make(k.in(0).shape(), k.attr());
  CHECK(k.in(0).numel() == 0 || (g.out_h >= 1 && g.out_w >= 1)) << k.op_name;
  return g;
}

void MaxPoolKernel(KernelContext& k) {
  cuda::DeviceGuard guard(k.device.index);
  const cudaStream_t stream = cuda::StreamOf(k);
  const Pool2dGeometry g = Geometry(k);
  const int64_t n = k.out(0).numel();
  if (n == 0) return;
  OFL_DISPATCH_FLOAT(k.out(0).dtype(), T, {
    MaxPoolForward<T><<<cuda::BlocksFor(n), cuda::kThreads, 0, stream>>>(g, k.in(0).data<T>(),
                                                                         k.out(0).data<T>());
    OFL_CUDA_LAUNCH_CHECK();
  });
}

void AvgPoolKernel(KernelContext& k) {
  cuda::DeviceGuard guard(k.device.index);
  const cudaStream_t stream = cuda::StreamOf(k);
  const Pool2dGeometry g = Geometry(k);
  const int64_t n = k.out(0).numel();
  if (n == 0) return;
  OFL_DISPATCH_FLOAT(k.out(0).dtype(), T, {
    AvgPoolForward<T><<<cuda::BlocksFor(n), cuda::kThreads, 0, stream>>>(g, k.in(0).data<T>(),
                                                                         k.out(0).data<T>());
    OFL_CUDA_LAUNCH_CHECK();
  });
}

// Inputs x, y, dy (y is not read: the argmax comes from x, as on the CPU).
void MaxPoolGradKernel(KernelContext& k) {
  cuda::DeviceGuard guard(k.device.index);
  const cudaStream_t stream = cuda::StreamOf(k);
  const Pool2dGeometry g = Geometry(k);
  const int64_t n_in = k.out(0).numel(), n_out = g.planes * g.out_h * g.out_w;
  if (n_in == 0) return;
  const cuda::StreamBuffer argmax(n_out * sizeof(int64_t), stream);
  OFL_DISPATCH_FLOAT(k.out(0).dtype(), T, {
    MaxPoolArgMax<T><<<cuda::BlocksFor(n_out), cuda::kThreads, 0, stream>>>(g, k.in(0).data<T>(),
                                                                            argmax.as<int64_t>());
    OFL_CUDA_LAUNCH_CHECK();
    MaxPoolBackward<T><<<cuda::BlocksFor(n_in), cuda::kThreads, 0, stream>>>(
        g, argmax.as<int64_t>(), k.in(2).data<T>(), k.out(0).data<T>());
    OFL_CUDA_LAUNCH_CHECK();
  });
}

// Inputs x (for its shape), dy.
void AvgPoolGradKernel(KernelContext& k) {
  cuda::DeviceGuard guard(k.device.index);
  const cudaStream_t stream = cuda::StreamOf(k);
  const Pool2dGeometry g = Geometry(k);
  const int64_t n_in = k.out(0).numel();
  if (n_in == 0) return;
  OFL_DISPATCH_FLOAT(k.out(0).dtype(), T, {
    AvgPoolBackward<T><<<cuda::BlocksFor(n_in), cuda::kThreads, 0, stream>>>(g, k.in(1).data<T>(),
                                                                             k.out(0).data<T>());
    OFL_CUDA_LAUNCH_CHECK();
  });
}

OFL_REGISTER_KERNEL("max_pool2d", DeviceType::kCUDA, MaxPoolKernel);
OFL_REGISTER_KERNEL("avg_pool2d", DeviceType::kCUDA, AvgPoolKernel);
OFL_REGISTER_KERNEL("max_pool2d_grad", DeviceType::kCUDA, MaxPoolGradKernel);
OFL_REGISTER_KERNEL("avg_pool2d_grad", DeviceType::kCUDA, AvgPoolGradKernel);

}  // namespace
}  // namespace ofl
