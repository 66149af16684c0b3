// ReduceSumTo on the device: out = scale * (sum of x over the axes where
// `kept` is 1 and x is not), the twin of math::ReduceSumTo
// (broadcast_loops.h) used by reduce_sum, reduce_mean and sum_to. Sums
// accumulate in double in a fixed order (one thread walks an output's
// elements in order; above kBlockReduceMin elements a block sums fixed
// strided partitions and combines them in a fixed tree), so results do not
// vary from run to run. T: float, double or __nv_bfloat16 (summed in
// double, stored rounded). Enqueued on `stream`; thread-safe.
#pragma once

#include <cuda_runtime_api.h>

#include "oneflow_lite/core/shape.h"

namespace ofl::cuda {

template <typename T>
void ReduceSumTo(const T* x, const Shape& x_shape, const Shape& kept, T* out, double scale,
                 cudaStream_t stream);

}  // namespace ofl::cuda
