// CUDA kernel of where (where.cpp): a grid-stride loop over the output, each
// input read through its broadcast strides (broadcast_index.cuh).
#include "ops/cuda_util.h"
#include "ops/math/broadcast_index.cuh"

namespace ofl {

namespace {

template <typename T>
__global__ void WhereBody(int64_t n, cuda::BroadcastIndex index, const bool* c, const T* a,
                          const T* b, T* y) {
  OFL_KERNEL_LOOP(i, n) {
    y[i] = c[cuda::OperandOffset(index, 0, i)] ? a[cuda::OperandOffset(index, 1, i)]
                                               : b[cuda::OperandOffset(index, 2, i)];
  }
}

void WhereKernel(KernelContext& kc) {
  cuda::DeviceGuard guard(kc.device.index);
  const cudaStream_t stream = cuda::StreamOf(kc);
  Tensor& out = kc.out(0);
  const int64_t n = out.numel();
  if (n == 0) return;
  const cuda::BroadcastIndex index = cuda::ToBroadcastIndex(math::MakeBroadcastLayout(
      out.shape(), {kc.in(0).shape(), kc.in(1).shape(), kc.in(2).shape()}));
  OFL_CUDA_DISPATCH_VALUE(out.dtype(), T, {
    WhereBody<T><<<cuda::BlocksFor(n), cuda::kThreads, 0, stream>>>(
        n, index, cuda::Data<bool>(kc.in(0)), cuda::Data<T>(kc.in(1)), cuda::Data<T>(kc.in(2)),
        cuda::Data<T>(out));
  });
  OFL_CUDA_LAUNCH_CHECK();
}

OFL_REGISTER_KERNEL("where", DeviceType::kCUDA, WhereKernel);

}  // namespace
}  // namespace ofl
