// CudaStream: the Stream of a CUDA device (oneflow_lite/core/stream.h) and
// the one way CUDA code reaches the cudaStream_t behind a Stream*.
//
// A CUDA kernel (ops/**/*_cuda.cu) launches its work onto
// CudaStreamOf(ctx.stream) and never synchronises it; the runtime orders
// streams with events. The implementation (streams, events, the caching
// allocator, the CUDA DeviceContext) lives beside this header.
//
// Thread safety: handle() from any thread; the other calls from the thread that
// owns the stream; work on one stream is ordered by CUDA.
#pragma once

#include <cuda_runtime_api.h>
#include <glog/logging.h>

#include <cstdint>
#include <functional>
#include <limits>

#include "oneflow_lite/core/status.h"
#include "oneflow_lite/core/stream.h"

// Device-side user errors (an id out of range in a kernel) never fault the
// device: the kernel stores the first bad element in the stream's
// CudaDeviceError record (device memory) under the id NoteDeviceCheck gave its
// launch, and the owner of the stream (the runtime, at the end of a step;
// eager, after the call) calls TakeDeviceError, which raises the same clear
// error the CPU kernel gives. Launches on one stream are ordered, so one launch
// owns the record at a time: a kernel writes only when `launch` is -1 or its
// own id, keeps the smallest flat index (atomicMin), and a second tiny kernel
// on the same stream copies that element's value into `value` while the tensor
// is alive.

namespace ofl {

// The record a kernel fills on a device-side user error (device memory).
struct CudaDeviceError {
  int32_t launch = -1;  // NoteDeviceCheck's id of the failing launch; -1: none
  int64_t flat_index = std::numeric_limits<int64_t>::max();  // first bad element
  int64_t value = 0;                                         // its value
};

class CudaStream : public Stream {
 public:
  virtual cudaStream_t handle() const = 0;
  // This stream's error record, in device memory (reset: launch -1).
  virtual CudaDeviceError* device_error() = 0;
  // Registers the check of the launch about to be enqueued and returns the id
  // its kernel stores in device_error()->launch; `report` turns the first bad
  // element (flat index, value) into the kernel's error, e.g. through
  // ops/index_check.h's message ("embedding 'wte': ids[1, 2]=12 is out of
  // range [0, 10) ..."). Notes live until TakeDeviceError.
  virtual int32_t NoteDeviceCheck(
      std::function<Status(int64_t flat_index, int64_t value)> report) = 0;
  // Synchronises the stream, reads and resets the record, drops the notes:
  // the failing launch's Status, or OK.
  virtual Status TakeDeviceError() = 0;
};

// The cudaStream_t of `stream`, which must be a CudaStream (CHECK).
inline cudaStream_t CudaStreamOf(Stream* stream) {
  auto* cuda = dynamic_cast<CudaStream*>(stream);
  CHECK(cuda != nullptr) << "a CUDA kernel was given a stream that is not a CUDA stream";
  return cuda->handle();
}

}  // namespace ofl
