// CUDA kernel of clip_factor (clip_grad.cpp): one thread computes
// min(1, max_norm / (norm + 1e-6)) with a NaN norm giving NaN, as
// clip_grad_cpu.cpp; the norm stays on the device.
#include "ops/cuda_device.cuh"
#include "ops/cuda_util.h"

namespace ofl {

namespace {

template <typename T>
__global__ void ClipFactor(double max_norm, const T* norm, T* out) {
  const double n = static_cast<double>(norm[0]);
  out[0] = static_cast<T>(cuda::NanMin(1.0, max_norm / (n + 1e-6)));
}

void ClipFactorKernel(KernelContext& k) {
  cuda::DeviceGuard guard(k.device.index);
  const cudaStream_t stream = cuda::StreamOf(k);
  const double max_norm = k.attr().Get<double>("max_norm");
  OFL_DISPATCH_FLOAT(k.out(0).dtype(), T, {
    ClipFactor<T><<<1, 1, 0, stream>>>(max_norm, k.in(0).data<T>(), k.out(0).data<T>());
    OFL_CUDA_LAUNCH_CHECK();
  });
}

}  // namespace

OFL_REGISTER_KERNEL("clip_factor", DeviceType::kCUDA, ClipFactorKernel);

}  // namespace ofl
