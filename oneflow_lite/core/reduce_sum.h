// The element-wise sums of host memory: the one the communicators reduce
// with (in-process and Gloo, so both add in one order and give the same
// bits) and the host DeviceContext's Accumulate and ScaleByInverse
// (device_context.h), which boxing and gradient accumulation use. The CUDA
// kernels of core/cuda/device_kernels.h give the same bits. Pure functions;
// thread-safe.
#pragma once

#include <cstdint>
#include <vector>

#include "oneflow_lite/core/data_type.h"

namespace ofl {

// dst[i] = (init ? init[i] : dst[i]) + srcs[0][i] + srcs[1][i] + ..., added
// left to right, for n elements of dtype (float32, float64, int32, int64).
// dst overlaps none of the sources (init may not be dst either).
void Accumulate(void* dst, const void* init, const std::vector<const void*>& srcs, int64_t n,
                DataType dtype);

// Whether Accumulate sums `dtype`.
bool CanAccumulate(DataType dtype);

// data[i] *= T(1) / T(k) for n elements of a float32 or float64 dtype (T):
// the mean of k accumulated values, rounded as the product by the reciprocal.
void ScaleByInverse(void* data, int64_t n, DataType dtype, int64_t k);

}  // namespace ofl
