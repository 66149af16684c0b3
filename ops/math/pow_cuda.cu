// CUDA kernel of pow (pow.cpp): a grid-stride loop over the output, each
// input read through its broadcast strides (broadcast_index.cuh).
#include "ops/cuda_util.h"
#include "ops/math/broadcast_index.cuh"

namespace ofl {

namespace {

template <typename T>
__global__ void PowBody(int64_t n, cuda::BroadcastIndex index, const T* a, const T* b, T* y) {
  OFL_KERNEL_LOOP(i, n) {
    y[i] = pow(a[cuda::OperandOffset(index, 0, i)], b[cuda::OperandOffset(index, 1, i)]);
  }
}

void PowKernel(KernelContext& kc) {
  cuda::DeviceGuard guard(kc.device.index);
  const cudaStream_t stream = cuda::StreamOf(kc);
  Tensor& out = kc.out(0);
  const int64_t n = out.numel();
  if (n == 0) return;
  const cuda::BroadcastIndex index = cuda::ToBroadcastIndex(
      math::MakeBroadcastLayout(out.shape(), {kc.in(0).shape(), kc.in(1).shape()}));
  OFL_DISPATCH_FLOAT(out.dtype(), T, {
    PowBody<T><<<cuda::BlocksFor(n), cuda::kThreads, 0, stream>>>(
        n, index, cuda::Data<T>(kc.in(0)), cuda::Data<T>(kc.in(1)), cuda::Data<T>(out));
  });
  OFL_CUDA_LAUNCH_CHECK();
}

OFL_REGISTER_KERNEL("pow", DeviceType::kCUDA, PowKernel);

}  // namespace
}  // namespace ofl
