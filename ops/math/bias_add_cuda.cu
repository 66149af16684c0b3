// CUDA kernel of bias_add (bias_add.cpp): x seen as (outer, C, inner) around
// the bias axis; element i gets bias[(i / inner) % C], as bias_add_cpu.cpp.
// bfloat16 adds in float.
#include "ops/cuda_device.cuh"
#include "ops/cuda_util.h"

namespace ofl {

namespace {

template <typename T>
__global__ void BiasAddKernel(int64_t n, int64_t inner, int64_t channels, const T* x, const T* bias,
                              T* y) {
  OFL_KERNEL_LOOP(i, n) {
    y[i] = cuda::Store<T>(cuda::Load(x[i]) + cuda::Load(bias[(i / inner) % channels]));
  }
}

template <typename T>
void BiasAdd(const Tensor& x, const Tensor& bias, Tensor& out, int64_t axis, cudaStream_t stream) {
  const Shape& s = x.shape();
  const int64_t channels = s[axis];
  const int64_t inner = s.Count(axis + 1, s.ndim());
  CHECK_EQ(bias.numel(), channels);
  const int64_t n = x.numel();
  if (n == 0) return;
  BiasAddKernel<T><<<cuda::BlocksFor(n), cuda::kThreads, 0, stream>>>(
      n, inner, channels, cuda::Data<T>(x), cuda::Data<T>(bias), cuda::Data<T>(out));
  OFL_CUDA_LAUNCH_CHECK();
}

void BiasAddCuda(KernelContext& kc) {
  cuda::DeviceGuard guard(kc.device.index);
  const cudaStream_t stream = cuda::StreamOf(kc);
  const Tensor& x = kc.in(0);
  int64_t axis = kc.attr().Get<int64_t>("axis");
  if (axis < 0) axis += x.shape().ndim();
  OFL_CUDA_DISPATCH_FLOAT(x.dtype(), T, BiasAdd<T>(x, kc.in(1), kc.out(0), axis, stream));
}

OFL_REGISTER_KERNEL("bias_add", DeviceType::kCUDA, BiasAddCuda);

}  // namespace
}  // namespace ofl
