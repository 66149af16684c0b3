// The kernels behind the CUDA DeviceContext's byte work
// (cuda_device_context.h): the by-bytes strided copy (also the array ops',
// ops/array/*_cuda.cu), the element-wise sum of boxing, in-process groups and
// gradient accumulation, and the scaling that turns a sum into a mean. Each
// launches on `stream` and returns without waiting; the caller has made the
// stream's GPU current. The sums and the scaling give the host's bits
// (core/reduce_sum.h) for float32, float64, int32 and int64. Thread-safe.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

#include "oneflow_lite/core/data_type.h"

namespace ofl::cuda {

// For every index i of `extent`: dst[sum i*dst_strides] = src[sum i*src_strides],
// elements of `element_size` bytes (1, 2, 4 or 8); strides in elements. The
// device twin of core/strided_copy.h's StridedCopy.
void StridedCopy(const std::vector<int64_t>& extent, int64_t element_size, const void* src,
                 const std::vector<int64_t>& src_strides, void* dst,
                 const std::vector<int64_t>& dst_strides, cudaStream_t stream);

// dst[i] = (init ? init[i] : dst[i]) + srcs[0][i] + ..., left to right in
// the element type for float32, float64, int32 and int64 (as reduce_sum.h
// adds on the host); float32 accumulation for bfloat16 and float16.
void Accumulate(void* dst, const void* init, const std::vector<const void*>& srcs, int64_t n,
                DataType dtype, cudaStream_t stream);

// data[i] *= T(1) / T(k) for float32 or float64 (as reduce_sum.h's
// ScaleByInverse).
void ScaleByInverse(void* data, int64_t n, DataType dtype, int64_t k, cudaStream_t stream);

}  // namespace ofl::cuda
