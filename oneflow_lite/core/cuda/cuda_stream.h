// CudaStream: the Stream of a CUDA device (oneflow_lite/core/stream.h) and
// the one way CUDA code reaches the cudaStream_t behind a Stream*.
//
// A CUDA kernel (ops/**/*_cuda.cu) launches its work onto
// CudaStreamOf(ctx.stream) and never synchronises it; the runtime orders
// streams with events. The implementation (streams, events, the caching
// allocator, the CUDA DeviceContext) lives beside this header.
// Thread safety: handle() from any thread; work on one stream is ordered by
// CUDA.
#pragma once

#include <cuda_runtime_api.h>
#include <glog/logging.h>

#include "oneflow_lite/core/stream.h"

namespace ofl {

class CudaStream : public Stream {
 public:
  virtual cudaStream_t handle() const = 0;
};

// The cudaStream_t of `stream`, which must be a CudaStream (CHECK).
inline cudaStream_t CudaStreamOf(Stream* stream) {
  auto* cuda = dynamic_cast<CudaStream*>(stream);
  CHECK(cuda != nullptr) << "a CUDA kernel was given a stream that is not a CUDA stream";
  return cuda->handle();
}

}  // namespace ofl
