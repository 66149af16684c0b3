// Device-side helpers of the CUDA kernels (ops/**/*_cuda.cu): bfloat16 as a
// storage type (Load widens it to float, Store rounds to nearest even; float
// and double pass through), typed math overloads for float and double,
// NaN-propagating max/min as ops/nan_compare.h, fixed-order warp and block sums (the same
// partition on every run, so results are deterministic), and, from
// core/cuda/kernel_index.cuh, the grid-stride loop and the small fixed-rank
// index arrays kernels take by value. Header-only; CUDA sources only.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <glog/logging.h>

#include <cstdint>
#include <vector>

#include "oneflow_lite/core/cuda/kernel_index.cuh"

namespace ofl::cuda {

// The type a kernel computes in for storage type T: float for bfloat16.
template <typename T>
struct ComputeTypeOf {
  using type = T;
};
template <>
struct ComputeTypeOf<__nv_bfloat16> {
  using type = float;
};
template <typename T>
using Compute = typename ComputeTypeOf<T>::type;

__device__ __forceinline__ float Load(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ float Load(float v) { return v; }
__device__ __forceinline__ double Load(double v) { return v; }

template <typename T>
__device__ __forceinline__ T Store(Compute<T> v) {
  return v;
}
template <>
__device__ __forceinline__ __nv_bfloat16 Store<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}

__device__ __forceinline__ float Exp(float x) { return expf(x); }
__device__ __forceinline__ double Exp(double x) { return exp(x); }
__device__ __forceinline__ float Log(float x) { return logf(x); }
__device__ __forceinline__ double Log(double x) { return log(x); }
__device__ __forceinline__ float Sqrt(float x) { return sqrtf(x); }
__device__ __forceinline__ double Sqrt(double x) { return sqrt(x); }
__device__ __forceinline__ float Tanh(float x) { return tanhf(x); }
__device__ __forceinline__ double Tanh(double x) { return tanh(x); }
__device__ __forceinline__ float Erfc(float x) { return erfcf(x); }
__device__ __forceinline__ double Erfc(double x) { return erfc(x); }
__device__ __forceinline__ float Pow(float x, float e) { return powf(x, e); }
__device__ __forceinline__ double Pow(double x, double e) { return pow(x, e); }

template <typename T>
__device__ __forceinline__ bool IsNan(T x) {
  return x != x;
}

// max(a, b), NaN when either is NaN (ops/nan_compare.h's NanMax).
template <typename T>
__device__ __forceinline__ T NanMax(T a, T b) {
  if (IsNan(b)) return b;
  return a < b ? b : a;
}

template <typename T>
__device__ __forceinline__ T NanMin(T a, T b) {
  if (IsNan(b)) return b;
  return b < a ? b : a;
}

template <typename T>
__device__ __forceinline__ T Infinity();
template <>
__device__ __forceinline__ float Infinity<float>() {
  return __int_as_float(0x7f800000);
}
template <>
__device__ __forceinline__ double Infinity<double>() {
  return __longlong_as_double(0x7ff0000000000000LL);
}

struct SumOp {
  template <typename T>
  __device__ __forceinline__ T operator()(T a, T b) const {
    return a + b;
  }
};
struct NanMaxOp {
  template <typename T>
  __device__ __forceinline__ T operator()(T a, T b) const {
    return NanMax(a, b);
  }
};

// Reduces `v` over the warp in a fixed butterfly order; every lane gets it.
template <typename T, typename Op>
__device__ __forceinline__ T WarpReduce(T v, Op op) {
  for (int offset = 16; offset > 0; offset /= 2) v = op(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

// Reduces `v` over the block (blockDim.x a multiple of 32, at most 1024) in a
// fixed order; every thread gets the result. Every thread of the block must
// call it; `scratch` is 32 elements of shared memory, reusable after return.
template <typename T, typename Op>
__device__ __forceinline__ T BlockReduce(T v, Op op, T* scratch) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int warps = blockDim.x / 32;
  v = WarpReduce(v, op);
  __syncthreads();  // scratch may still be read by an earlier call
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  T r = scratch[0];
  for (int w = 1; w < warps; ++w) r = op(r, scratch[w]);
  return r;
}

}  // namespace ofl::cuda
