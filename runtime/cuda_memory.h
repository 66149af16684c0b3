// The memory of an in-process group on CUDA devices (CUDA builds only): N
// virtual devices on one GPU in one process use
// runtime/inprocess_communicator.h with these copies (cudaMemcpyAsync, any
// direction, then waited for) and this sum (a kernel: dst[i] = (init ? init[i]
// : dst[i]) + srcs[0][i] + ..., left to right in the element type for float32,
// float64, int32 and int64, as runtime/reduce_sum.h adds on the host, so both
// give the same bits; float32 accumulation for bfloat16 and float16). Every
// call of CudaMemory runs on GPU `ordinal` on a stream of its own and returns
// when done; the boxing helpers below enqueue on the caller's stream instead.
// Thread-safe.
#pragma once

#include <vector>

#include "oneflow_lite/core/stream.h"
#include "oneflow_lite/core/tensor.h"
#include "runtime/inprocess_communicator.h"

namespace ofl {

InProcessMemory CudaMemory(int ordinal);

// The kernel behind CudaMemory's accumulate, on a stream of its own, waited
// for.
void CudaAccumulate(int ordinal, void* dst, const void* init, const std::vector<const void*>& srcs,
                    int64_t n, DataType dtype);

// Boxing's device work (runtime/device_support.h CopyBoxOn, AccumulateOn),
// enqueued on `stream` (a CudaStream) and not waited for: the box `box` of
// `src` at `src_start` to `dst_start` of `*dst` (a strided copy kernel), and
// dst[i] += src[i] (the sum kernel above, so the same bits as the host sum).
void CudaCopyBox(Stream* stream, const Tensor& src, const std::vector<int64_t>& src_start,
                 Tensor* dst, const std::vector<int64_t>& dst_start, const Shape& box);
void CudaAccumulateOn(Stream* stream, void* dst, const void* src, int64_t n, DataType dtype);

}  // namespace ofl
