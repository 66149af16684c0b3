// CUDA kernels of exp, log, abs and sign (unary_math.cpp): a grid-stride
// loop, as unary_math_cpu.cpp.
#include "ops/cuda_device.cuh"
#include "ops/cuda_util.h"

namespace ofl {

namespace {

struct ExpOp {
  template <typename T>
  __device__ T operator()(T x) const {
    return exp(x);
  }
};
struct LogOp {
  template <typename T>
  __device__ T operator()(T x) const {
    return log(x);
  }
};
struct AbsOp {
  template <typename T>
  __device__ T operator()(T x) const {
    return x < T(0) ? -x : x;
  }
};
struct SignOp {
  template <typename T>
  __device__ T operator()(T x) const {
    return T((T(0) < x) - (x < T(0)));
  }
};

template <typename T, typename Op>
__global__ void UnaryBody(int64_t n, const T* x, T* y, Op op) {
  OFL_KERNEL_LOOP(i, n) { y[i] = op(x[i]); }
}

template <typename T, typename Op>
void Unary(const Tensor& x, Tensor& y, Op op, cudaStream_t stream) {
  const int64_t n = y.numel();
  if (n == 0) return;
  UnaryBody<<<cuda::BlocksFor(n), cuda::kThreads, 0, stream>>>(n, cuda::Data<T>(x),
                                                               cuda::Data<T>(y), op);
  OFL_CUDA_LAUNCH_CHECK();
}

// float32/float64 (Float), or those and int32/int64.
template <typename Op, bool kIntegersToo>
KernelFn UnaryKernel(Op op) {
  return [op](KernelContext& kc) {
    cuda::DeviceGuard guard(kc.device.index);
    const cudaStream_t stream = cuda::StreamOf(kc);
    const DataType dtype = kc.in(0).dtype();
    if constexpr (kIntegersToo) {
      if (dtype == DataType::kInt32 || dtype == DataType::kInt64) {
        OFL_DISPATCH_INDEX(dtype, T, Unary<T>(kc.in(0), kc.out(0), op, stream));
        return;
      }
    }
    OFL_DISPATCH_FLOAT(dtype, T, Unary<T>(kc.in(0), kc.out(0), op, stream));
  };
}

OFL_REGISTER_KERNEL("exp", DeviceType::kCUDA, (UnaryKernel<ExpOp, false>(ExpOp())));
OFL_REGISTER_KERNEL("log", DeviceType::kCUDA, (UnaryKernel<LogOp, false>(LogOp())));
OFL_REGISTER_KERNEL("abs", DeviceType::kCUDA, (UnaryKernel<AbsOp, true>(AbsOp())));
OFL_REGISTER_KERNEL("sign", DeviceType::kCUDA, (UnaryKernel<SignOp, true>(SignOp())));

}  // namespace
}  // namespace ofl
