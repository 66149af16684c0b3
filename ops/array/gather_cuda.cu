// CUDA kernels of gather and gather_grad (gather.cpp), as gather_cpu.cpp:
// the indices are checked on the device (index_check_cuda.h) and the kernels
// skip an out-of-range one; gather_grad gives each (outer, inner) column to
// one thread, which adds in index order (no atomics, deterministic).
#include "ops/array/gather_plan.h"
#include "ops/cuda_device.cuh"
#include "ops/cuda_util.h"
#include "ops/index_check_cuda.h"

namespace ofl {

namespace {

template <typename T, typename I>
__global__ void GatherBody(GatherPlan p, const T* x, const I* index, T* y) {
  const int64_t n = p.outer * p.index_len * p.inner;
  OFL_KERNEL_LOOP(at, n) {
    const int64_t o = at / (p.index_len * p.inner);
    const int64_t i = at % p.inner;
    const int64_t k = static_cast<int64_t>(index[at]);
    y[at] = k >= 0 && k < p.values_len ? x[(o * p.values_len + k) * p.inner + i] : T(0);
  }
}

template <typename T, typename I>
__global__ void GatherGradBody(GatherPlan p, const I* index, const T* dy, T* dx) {
  OFL_KERNEL_LOOP(column, p.outer * p.inner) {
    const int64_t o = column / p.inner;
    const int64_t i = column % p.inner;
    for (int64_t j = 0; j < p.values_len; ++j) dx[(o * p.values_len + j) * p.inner + i] = T(0);
    for (int64_t r = 0; r < p.index_len; ++r) {
      const int64_t at = (o * p.index_len + r) * p.inner + i;
      const int64_t k = static_cast<int64_t>(index[at]);
      if (k >= 0 && k < p.values_len) dx[(o * p.values_len + k) * p.inner + i] += dy[at];
    }
  }
}

int64_t AxisOf(const KernelContext& kc, int64_t rank) {
  const int64_t axis = kc.attr().Get<int64_t>("axis");
  return axis < 0 ? axis + rank : axis;
}

void GatherKernel(KernelContext& kc) {
  cuda::DeviceGuard guard(kc.device.index);
  const cudaStream_t stream = cuda::StreamOf(kc);
  const Tensor& x = kc.in(0);
  const Tensor& index = kc.in(1);
  const int64_t axis = AxisOf(kc, x.shape().ndim());
  const GatherPlan p = MakeGatherPlan(x.shape(), index.shape(), axis);
  cuda::LaunchIndexCheck(kc, "index", index, p.values_len, "x.shape[" + std::to_string(axis) + "]",
                         {});
  const int64_t n = index.numel();
  if (n == 0) return;
  OFL_CUDA_DISPATCH_VALUE(x.dtype(), T, OFL_DISPATCH_INDEX(index.dtype(), I, {
                            GatherBody<T, I><<<cuda::BlocksFor(n), cuda::kThreads, 0, stream>>>(
                                p, cuda::Data<T>(x), index.data<I>(), cuda::Data<T>(kc.out(0)));
                            OFL_CUDA_LAUNCH_CHECK();
                          }));
}

void GatherGradKernel(KernelContext& kc) {
  cuda::DeviceGuard guard(kc.device.index);
  const cudaStream_t stream = cuda::StreamOf(kc);
  const Tensor& index = kc.in(0);
  Tensor& dx = kc.out(0);
  const int64_t axis = AxisOf(kc, dx.shape().ndim());
  const GatherPlan p = MakeGatherPlan(dx.shape(), index.shape(), axis);
  cuda::LaunchIndexCheck(kc, "index", index, p.values_len, "shape[" + std::to_string(axis) + "]",
                         {});
  const int64_t columns = p.outer * p.inner;
  if (dx.numel() == 0) return;
  OFL_DISPATCH_FLOAT(dx.dtype(), T, OFL_DISPATCH_INDEX(index.dtype(), I, {
                       GatherGradBody<T, I>
                           <<<cuda::BlocksFor(columns), cuda::kThreads, 0, stream>>>(
                               p, index.data<I>(), cuda::Data<T>(kc.in(1)), cuda::Data<T>(dx));
                       OFL_CUDA_LAUNCH_CHECK();
                     }));
}

OFL_REGISTER_KERNEL("gather", DeviceType::kCUDA, GatherKernel);
OFL_REGISTER_KERNEL("gather_grad", DeviceType::kCUDA, GatherGradKernel);

}  // namespace
}  // namespace ofl
