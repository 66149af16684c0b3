// CUDA kernels of max_pool2d, avg_pool2d, max_pool2d_grad and avg_pool2d_grad:
// our own kernels rather than cuDNN's pooling, because the ops' contract is
// the CPU loops' (pool2d_cpu.cpp) and cuDNN's does not state it: the first
// maximum of a window in row-major order wins ties, a NaN is the maximum
// (np.argmax), and the backward passes are deterministic. Forward: one
// thread per output element. Backward: a gather, one thread per input
// element, summing the dy of every window that covers it in the windows'
// row-major order (the CPU's order of +=), so there are no atomics; max
// pooling first writes each window's argmax to scratch. Shapes come from the
// local tensors; the window and its argmax are the CPU's (pool2d_window.h).
#include "ops/conv/pool2d_window.h"
#include "ops/cuda_device.cuh"
#include "ops/cuda_util.h"

namespace ofl {

namespace {

// The output rows (or columns) whose windows cover input row `h`: [lo, hi].
__device__ void Covering(int64_t h, int64_t kernel, int64_t stride, int64_t pad, int64_t out,
                         int64_t* lo, int64_t* hi) {
  const int64_t first = h + pad - kernel + 1;
  *lo = first <= 0 ? 0 : (first + stride - 1) / stride;
  *hi = min((h + pad) / stride, out - 1);
}

// dx of input element i (of all planes): the sum of grad(o, at) over the
// outputs o whose windows cover it, `at` being i's index in its plane, in the
// windows' row-major order (the CPU's order of +=).
template <typename T, typename Grad>
__device__ T GatherGrad(const Pool2dGeometry& g, int64_t i, Grad grad) {
  const int64_t plane = g.height * g.width, per_plane = g.out_h * g.out_w;
  const int64_t p = i / plane, at = i % plane, h = at / g.width, w = at % g.width;
  int64_t oh0, oh1, ow0, ow1;
  Covering(h, g.kernel_h, g.stride_h, g.pad_h, g.out_h, &oh0, &oh1);
  Covering(w, g.kernel_w, g.stride_w, g.pad_w, g.out_w, &ow0, &ow1);
  T sum = 0;
  for (int64_t oh = oh0; oh <= oh1; ++oh) {
    for (int64_t ow = ow0; ow <= ow1; ++ow) sum += grad(p * per_plane + oh * g.out_w + ow, at);
  }
  return sum;
}

// The argmax (in its plane) of output o's window.
template <typename T>
__device__ int64_t ArgMaxOf(const Pool2dGeometry& g, const T* x, int64_t o) {
  const int64_t per_plane = g.out_h * g.out_w;
  const int64_t p = o / per_plane, oh = (o % per_plane) / g.out_w, ow = o % g.out_w;
  return PoolArgMax(x + p * g.height * g.width, g, PoolWindowOf(g, oh, ow));
}

template <typename T>
__global__ void MaxPoolForward(Pool2dGeometry g, const T* x, T* y) {
  const int64_t per_plane = g.out_h * g.out_w;
  OFL_KERNEL_LOOP(o, g.planes * per_plane) {
    const T* xp = x + (o / per_plane) * g.height * g.width;
    y[o] = xp[ArgMaxOf(g, x, o)];
  }
}

template <typename T>
__global__ void MaxPoolArgMax(Pool2dGeometry g, const T* x, int64_t* argmax) {
  OFL_KERNEL_LOOP(o, g.planes * g.out_h * g.out_w) { argmax[o] = ArgMaxOf(g, x, o); }
}

template <typename T>
__global__ void MaxPoolBackward(Pool2dGeometry g, const int64_t* argmax, const T* dy, T* dx) {
  OFL_KERNEL_LOOP(i, g.planes * g.height * g.width) {
    dx[i] =
        GatherGrad<T>(g, i, [&](int64_t o, int64_t at) { return argmax[o] == at ? dy[o] : T(0); });
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
    const PoolWindow w = PoolWindowOf(g, oh, ow);
    T sum = 0;
    for (int64_t h = w.h_begin; h < w.h_end; ++h) {
      for (int64_t c = w.w_begin; c < w.w_end; ++c) sum += xp[h * g.width + c];
    }
    y[o] = sum * scale;
  }
}

template <typename T>
__global__ void AvgPoolBackward(Pool2dGeometry g, const T* dy, T* dx) {
  const T scale = T(1) / static_cast<T>(g.kernel_h * g.kernel_w);
  OFL_KERNEL_LOOP(i, g.planes * g.height * g.width) {
    dx[i] = GatherGrad<T>(g, i, [&](int64_t o, int64_t) { return dy[o] * scale; });
  }
}

// The set-up the four kernels share: the device, the stream and the
// geometry; nothing to do when the output (y or dx) is empty. Calls
// launch(T(), g, stream) with T the dtype's type.
template <typename Launch>
void RunPool(KernelContext& k, Launch launch) {
  cuda::DeviceGuard guard(k.device.index);
  const cudaStream_t stream = cuda::StreamOf(k);
  const Pool2dGeometry g = PoolGeometryOf(k);
  if (k.out(0).numel() == 0) return;
  OFL_DISPATCH_FLOAT(k.out(0).dtype(), T, launch(T(), g, stream));
}

// One grid-stride kernel over n elements, launched and checked.
template <typename... Params, typename... Args>
void LaunchOver(int64_t n, cudaStream_t stream, void (*kernel)(Params...), Args... args) {
  kernel<<<cuda::BlocksFor(n), cuda::kThreads, 0, stream>>>(args...);
  OFL_CUDA_LAUNCH_CHECK();
}

void MaxPoolKernel(KernelContext& k) {
  RunPool(k, [&](auto t, const Pool2dGeometry& g, cudaStream_t stream) {
    using T = decltype(t);
    LaunchOver(k.out(0).numel(), stream, MaxPoolForward<T>, g, k.in(0).data<T>(),
               k.out(0).data<T>());
  });
}

void AvgPoolKernel(KernelContext& k) {
  RunPool(k, [&](auto t, const Pool2dGeometry& g, cudaStream_t stream) {
    using T = decltype(t);
    LaunchOver(k.out(0).numel(), stream, AvgPoolForward<T>, g, k.in(0).data<T>(),
               k.out(0).data<T>());
  });
}

// Inputs x, y, dy (y is not read: the argmax comes from x, as on the CPU).
void MaxPoolGradKernel(KernelContext& k) {
  RunPool(k, [&](auto t, const Pool2dGeometry& g, cudaStream_t stream) {
    using T = decltype(t);
    const int64_t n_out = g.planes * g.out_h * g.out_w;
    const cuda::StreamBuffer argmax(n_out * sizeof(int64_t), stream);
    LaunchOver(n_out, stream, MaxPoolArgMax<T>, g, k.in(0).data<T>(), argmax.as<int64_t>());
    LaunchOver(k.out(0).numel(), stream, MaxPoolBackward<T>, g, argmax.as<int64_t>(),
               k.in(2).data<T>(), k.out(0).data<T>());
  });
}

// Inputs x (for its shape), dy.
void AvgPoolGradKernel(KernelContext& k) {
  RunPool(k, [&](auto t, const Pool2dGeometry& g, cudaStream_t stream) {
    using T = decltype(t);
    LaunchOver(k.out(0).numel(), stream, AvgPoolBackward<T>, g, k.in(1).data<T>(),
               k.out(0).data<T>());
  });
}

OFL_REGISTER_KERNEL("max_pool2d", DeviceType::kCUDA, MaxPoolKernel);
OFL_REGISTER_KERNEL("avg_pool2d", DeviceType::kCUDA, AvgPoolKernel);
OFL_REGISTER_KERNEL("max_pool2d_grad", DeviceType::kCUDA, MaxPoolGradKernel);
OFL_REGISTER_KERNEL("avg_pool2d_grad", DeviceType::kCUDA, AvgPoolGradKernel);

}  // namespace
}  // namespace ofl
