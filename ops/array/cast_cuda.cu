// CUDA kernel of cast (cast.cpp registers the op; cast_cpu.cpp is its CPU
// twin): float32/float64/bfloat16/int32/int64/bool to any of them,
// elementwise. As on the CPU, every value goes through double, and
// float -> bfloat16 rounds to nearest even (__float2bfloat16_rn). A NaN stays
// a NaN, though its bits may be CUDA's canonical NaN rather than the CPU's.
#include <cuda_bf16.h>

#include "ops/cuda_device.cuh"
#include "ops/cuda_util.h"

namespace ofl {

namespace {

__device__ __forceinline__ double Widen(float v) { return v; }
__device__ __forceinline__ double Widen(double v) { return v; }
__device__ __forceinline__ double Widen(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ double Widen(int32_t v) { return v; }
__device__ __forceinline__ double Widen(int64_t v) { return static_cast<double>(v); }
__device__ __forceinline__ double Widen(bool v) { return v ? 1.0 : 0.0; }

template <typename To>
__device__ __forceinline__ To Narrow(double v);
template <>
__device__ __forceinline__ float Narrow<float>(double v) {
  return static_cast<float>(v);
}
template <>
__device__ __forceinline__ double Narrow<double>(double v) {
  return v;
}
template <>
__device__ __forceinline__ __nv_bfloat16 Narrow<__nv_bfloat16>(double v) {
  return __float2bfloat16_rn(static_cast<float>(v));
}
template <>
__device__ __forceinline__ int32_t Narrow<int32_t>(double v) {
  return static_cast<int32_t>(v);
}
template <>
__device__ __forceinline__ int64_t Narrow<int64_t>(double v) {
  return static_cast<int64_t>(v);
}
template <>
__device__ __forceinline__ bool Narrow<bool>(double v) {
  return v != 0.0;
}

// Runs `body` with `T` bound to the device type of any castable dtype.
#define OFL_CAST_DISPATCH(dtype, T, ...)              \
  do {                                                \
    if ((dtype) == DataType::kBFloat16) {             \
      using T = __nv_bfloat16;                        \
      __VA_ARGS__;                                    \
    } else {                                          \
      OFL_CUDA_DISPATCH_VALUE(dtype, T, __VA_ARGS__); \
    }                                                 \
  } while (0)

template <typename From, typename To>
__global__ void CastLoop(int64_t n, const From* x, To* y) {
  OFL_KERNEL_LOOP(i, n) { y[i] = Narrow<To>(Widen(x[i])); }
}

void CastKernel(KernelContext& k) {
  cuda::DeviceGuard guard(k.device.index);
  const cudaStream_t stream = cuda::StreamOf(k);
  const Tensor& x = k.in(0);
  Tensor& out = k.out(0);
  const int64_t n = out.numel();
  if (n == 0) return;
  OFL_CAST_DISPATCH(x.dtype(), From, {
    OFL_CAST_DISPATCH(out.dtype(), To, {
      CastLoop<From, To><<<cuda::BlocksFor(n), cuda::kThreads, 0, stream>>>(n, cuda::Data<From>(x),
                                                                            cuda::Data<To>(out));
      OFL_CUDA_LAUNCH_CHECK();
    });
  });
}

OFL_REGISTER_KERNEL("cast", DeviceType::kCUDA, CastKernel);

}  // namespace
}  // namespace ofl
