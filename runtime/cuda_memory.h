// The memory of an in-process group on CUDA devices (CUDA builds only): N
// virtual devices on one GPU in one process use runtime/inprocess_communicator.h
// with these copies (cudaMemcpyAsync, any direction, then waited for) and
// this sum (a kernel: dst[i] = (init ? init[i] : dst[i]) + srcs[0][i] + ...,
// left to right in the element type for float32, float64, int32 and int64,
// as runtime/reduce_sum.h adds on the host, so both give the same bits;
// float32 accumulation for bfloat16 and float16). Every call runs on the
// calling thread's GPU `ordinal` on a stream of its own and returns when done.
// Thread-safe.
#pragma once

#include "runtime/inprocess_communicator.h"

namespace ofl {

InProcessMemory CudaMemory(int ordinal);

// The kernel behind CudaMemory's accumulate, on the legacy stream, waited for.
void CudaAccumulate(int ordinal, void* dst, const void* init, const std::vector<const void*>& srcs,
                    int64_t n, DataType dtype);

}  // namespace ofl
