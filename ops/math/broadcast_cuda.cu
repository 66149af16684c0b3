// CUDA kernels of broadcast_to and sum_to (broadcast.cpp): broadcast_to reads
// x through its broadcast strides (broadcast_index.cuh); sum_to is
// cuda::ReduceSumTo. Shapes are the local tensors', as broadcast_cpu.cpp.
#include "ops/cuda_util.h"
#include "ops/math/axes.h"
#include "ops/math/broadcast_index.cuh"
#include "ops/math/reduce_sum_cuda.h"

namespace ofl {

namespace {

template <typename T>
__global__ void BroadcastToKernel(int64_t n, cuda::BroadcastIndex index, const T* x, T* y) {
  OFL_KERNEL_LOOP(i, n) { y[i] = x[cuda::OperandOffset(index, 0, i)]; }
}

template <typename T>
void BroadcastTo(const Tensor& x, Tensor& out, const std::vector<int64_t>& axes,
                 cudaStream_t stream) {
  const int64_t n = out.numel();
  if (n == 0) return;
  const Shape expanded = math::ExpandRank(x.shape(), out.shape().ndim(), axes);
  const cuda::BroadcastIndex index =
      cuda::ToBroadcastIndex(math::MakeBroadcastLayout(out.shape(), {expanded}));
  BroadcastToKernel<T><<<cuda::BlocksFor(n), cuda::kThreads, 0, stream>>>(
      n, index, cuda::Data<T>(x), cuda::Data<T>(out));
  OFL_CUDA_LAUNCH_CHECK();
}

void BroadcastKernel(KernelContext& kc) {
  cuda::DeviceGuard guard(kc.device.index);
  const cudaStream_t stream = cuda::StreamOf(kc);
  Tensor& out = kc.out(0);
  const auto axes = math::NormalizedAxesUnchecked(kc.attr().Get<std::vector<int64_t>>("axes"),
                                                  out.shape().ndim());
  OFL_CUDA_DISPATCH_FLOAT(out.dtype(), T, BroadcastTo<T>(kc.in(0), out, axes, stream));
}

void SumToKernel(KernelContext& kc) {
  cuda::DeviceGuard guard(kc.device.index);
  const cudaStream_t stream = cuda::StreamOf(kc);
  const Tensor& x = kc.in(0);
  Tensor& out = kc.out(0);
  const auto axes =
      math::NormalizedAxesUnchecked(kc.attr().Get<std::vector<int64_t>>("axes"), x.shape().ndim());
  const Shape kept = math::ExpandRank(out.shape(), x.shape().ndim(), axes);
  OFL_CUDA_DISPATCH_FLOAT(
      out.dtype(), T,
      cuda::ReduceSumTo<T>(cuda::Data<T>(x), x.shape(), kept, cuda::Data<T>(out), 1.0, stream));
}

OFL_REGISTER_KERNEL("broadcast_to", DeviceType::kCUDA, BroadcastKernel);
OFL_REGISTER_KERNEL("sum_to", DeviceType::kCUDA, SumToKernel);

}  // namespace
}  // namespace ofl
