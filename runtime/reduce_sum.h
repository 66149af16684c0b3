// The element-wise sum the communicators reduce with, shared by the
// in-process and the Gloo communicator so that both add in one order and
// give the same bits. Pure functions; thread-safe.
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

}  // namespace ofl
