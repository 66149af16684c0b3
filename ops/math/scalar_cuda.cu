// CUDA kernels of scalar_add, scalar_mul and scalar_pow (scalar.cpp): one
// grid-stride map each; the scalar is cast to the element type first, and
// exponents 2 and 1 are exact, as scalar_cpu.cpp. bfloat16 computes in float.
#include "ops/cuda_device.cuh"
#include "ops/cuda_util.h"

namespace ofl {

namespace {

enum class ScalarOp { kAdd, kMul, kSquare, kIdentity, kPow };

template <typename T>
__global__ void ScalarMap(int64_t n, ScalarOp op, cuda::Compute<T> v, const T* x, T* y) {
  OFL_KERNEL_LOOP(i, n) {
    const cuda::Compute<T> a = cuda::Load(x[i]);
    cuda::Compute<T> r = a;
    switch (op) {
      case ScalarOp::kAdd:
        r = a + v;
        break;
      case ScalarOp::kMul:
        r = a * v;
        break;
      case ScalarOp::kSquare:
        r = a * a;
        break;
      case ScalarOp::kIdentity:
        break;
      case ScalarOp::kPow:
        r = cuda::Pow(a, v);
        break;
    }
    y[i] = cuda::Store<T>(r);
  }
}

void Run(KernelContext& kc, ScalarOp op, double value) {
  cuda::DeviceGuard guard(kc.device.index);
  const cudaStream_t stream = cuda::StreamOf(kc);
  const int64_t n = kc.out(0).numel();
  if (n == 0) return;
  OFL_CUDA_DISPATCH_FLOAT(kc.out(0).dtype(), T, {
    ScalarMap<T><<<cuda::BlocksFor(n), cuda::kThreads, 0, stream>>>(
        n, op, static_cast<cuda::Compute<T>>(value), cuda::Data<T>(kc.in(0)),
        cuda::Data<T>(kc.out(0)));
    OFL_CUDA_LAUNCH_CHECK();
  });
}

void ScalarAddKernel(KernelContext& kc) { Run(kc, ScalarOp::kAdd, kc.attr().Get<double>("value")); }
void ScalarMulKernel(KernelContext& kc) { Run(kc, ScalarOp::kMul, kc.attr().Get<double>("value")); }
void ScalarPowKernel(KernelContext& kc) {
  const double e = kc.attr().Get<double>("exponent");
  Run(kc, e == 2.0 ? ScalarOp::kSquare : e == 1.0 ? ScalarOp::kIdentity : ScalarOp::kPow, e);
}

OFL_REGISTER_KERNEL("scalar_add", DeviceType::kCUDA, ScalarAddKernel);
OFL_REGISTER_KERNEL("scalar_mul", DeviceType::kCUDA, ScalarMulKernel);
OFL_REGISTER_KERNEL("scalar_pow", DeviceType::kCUDA, ScalarPowKernel);

}  // namespace
}  // namespace ofl
