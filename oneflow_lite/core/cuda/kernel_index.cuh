// The indexing every CUDA kernel shares (core/cuda's and ops/**/*_cuda.cu
// through ops/cuda_device.cuh): the grid-stride loop and the small
// fixed-rank size and stride arrays kernels take by value, with the offset
// of a flat row-major index. Header-only; CUDA sources only.
#pragma once

#include <cuda_runtime.h>
#include <glog/logging.h>

#include <cstdint>
#include <vector>

// i runs over [0, n) in a grid-stride loop (64-bit index).
#define OFL_KERNEL_LOOP(i, n)                                                            \
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < (n); \
       i += static_cast<int64_t>(blockDim.x) * gridDim.x)

namespace ofl::cuda {

// Up to kMaxDims sizes or strides, passed to a kernel by value.
constexpr int kMaxDims = 12;
struct Dims {
  int n = 0;
  int64_t v[kMaxDims] = {};
};

inline Dims ToDims(const std::vector<int64_t>& values) {
  CHECK_LE(values.size(), static_cast<size_t>(kMaxDims)) << "more than " << kMaxDims << " dims";
  Dims d;
  d.n = static_cast<int>(values.size());
  for (size_t i = 0; i < values.size(); ++i) d.v[i] = values[i];
  return d;
}

// The offset sum(index[a] * strides[a]) of flat row-major index `i` of `extent`.
__device__ __forceinline__ int64_t OffsetOf(int64_t i, const Dims& extent, const Dims& strides) {
  int64_t offset = 0;
  for (int a = extent.n - 1; a >= 0; --a) {
    const int64_t size = extent.v[a];
    offset += (i % size) * strides.v[a];
    i /= size;
  }
  return offset;
}

}  // namespace ofl::cuda
