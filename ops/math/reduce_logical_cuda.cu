// CUDA kernels of reduce_any, reduce_all, argmax and argmin
// (reduce_logical.cpp): one thread per output element walks its reduced
// elements (reduce_walk.h), as reduce_logical_cpu.cpp.
#include "ops/cuda_device.cuh"
#include "ops/cuda_util.h"
#include "ops/math/axes.h"
#include "ops/math/reduce_walk.h"

namespace ofl {

namespace {

struct Walk {
  cuda::Dims kept_dims, kept_strides, reduced_dims, reduced_strides;
  int64_t num_kept = 1;
  int64_t num_reduced = 1;
};

Walk WalkOf(const KernelContext& kc) {
  const Shape& x = kc.in(0).shape();
  std::vector<int64_t> axes;
  if (kc.attr().Has("axis")) {
    int64_t a = kc.attr().Get<int64_t>("axis");
    axes.push_back(a < 0 ? a + x.ndim() : a);
  } else {
    axes =
        math::NormalizeAxes(kc.attr().Get<std::vector<int64_t>>("axes"), x.ndim(), "", "").value();
    if (axes.empty()) {
      for (int64_t a = 0; a < x.ndim(); ++a) axes.push_back(a);
    }
  }
  const math::ReduceWalk w = math::MakeReduceWalk(x, axes);
  return {cuda::ToDims(w.kept_dims),
          cuda::ToDims(w.kept_strides),
          cuda::ToDims(w.reduced_dims),
          cuda::ToDims(w.reduced_strides),
          w.num_kept,
          w.num_reduced};
}

template <typename T, bool kAny>
__global__ void LogicalBody(Walk w, const T* x, bool* y) {
  OFL_KERNEL_LOOP(o, w.num_kept) {
    const T* base = x + cuda::OffsetOf(o, w.kept_dims, w.kept_strides);
    bool result = !kAny;
    for (int64_t r = 0; r < w.num_reduced; ++r) {
      const bool nonzero = base[cuda::OffsetOf(r, w.reduced_dims, w.reduced_strides)] != T(0);
      if (nonzero == kAny) {
        result = kAny;
        break;
      }
    }
    y[o] = result;
  }
}

template <typename T>
__device__ bool IsNan(T v) {
  return v != v;
}

template <typename T, bool kMax>
__global__ void ArgBody(Walk w, const T* x, int64_t* y) {
  const int64_t stride = w.reduced_strides.v[0];
  OFL_KERNEL_LOOP(o, w.num_kept) {
    const T* p = x + cuda::OffsetOf(o, w.kept_dims, w.kept_strides);
    int64_t best = 0;
    T best_value = p[0];
    for (int64_t r = 1; r < w.num_reduced && !IsNan(best_value); ++r) {
      const T v = p[r * stride];
      if (IsNan(v) || (kMax ? v > best_value : v < best_value)) {
        best = r;
        best_value = v;
      }
    }
    y[o] = best;
  }
}

template <bool kAny>
void LogicalKernel(KernelContext& kc) {
  cuda::DeviceGuard guard(kc.device.index);
  const cudaStream_t stream = cuda::StreamOf(kc);
  const Walk w = WalkOf(kc);
  if (w.num_kept == 0) return;
  OFL_CUDA_DISPATCH_VALUE(kc.in(0).dtype(), T, {
    LogicalBody<T, kAny><<<cuda::BlocksFor(w.num_kept), cuda::kThreads, 0, stream>>>(
        w, cuda::Data<T>(kc.in(0)), cuda::Data<bool>(kc.out(0)));
  });
  OFL_CUDA_LAUNCH_CHECK();
}

template <bool kMax>
void ArgKernel(KernelContext& kc) {
  cuda::DeviceGuard guard(kc.device.index);
  const cudaStream_t stream = cuda::StreamOf(kc);
  const Walk w = WalkOf(kc);
  if (w.num_kept == 0) return;
  OFL_CUDA_DISPATCH_VALUE(kc.in(0).dtype(), T, {
    ArgBody<T, kMax><<<cuda::BlocksFor(w.num_kept), cuda::kThreads, 0, stream>>>(
        w, cuda::Data<T>(kc.in(0)), cuda::Data<int64_t>(kc.out(0)));
  });
  OFL_CUDA_LAUNCH_CHECK();
}

OFL_REGISTER_KERNEL("reduce_any", DeviceType::kCUDA, LogicalKernel<true>);
OFL_REGISTER_KERNEL("reduce_all", DeviceType::kCUDA, LogicalKernel<false>);
OFL_REGISTER_KERNEL("argmax", DeviceType::kCUDA, ArgKernel<true>);
OFL_REGISTER_KERNEL("argmin", DeviceType::kCUDA, ArgKernel<false>);

}  // namespace
}  // namespace ofl
