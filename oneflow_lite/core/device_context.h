// DeviceContext: what acts for one device in a process, and the one seam
// between device-independent code (the runtime, eager) and a backend: the
// device's Allocator, the factory of its Streams and Events (stream.h), and
// its byte work: copies and fills (ordered on a stream, or synchronous), a
// clone to host, the end of a stream's work with its device-side errors,
// boxing's strided box copy and the element-wise sum and mean of boxing and
// gradient accumulation. Contexts come from CreateDeviceContext
// (device_backend.h); the CUDA one is core/cuda/cuda_device_context.h.
//
// Thread safety: every method from any thread.
#pragma once

#include <memory>
#include <vector>

#include "oneflow_lite/core/allocator.h"
#include "oneflow_lite/core/stream.h"
#include "oneflow_lite/core/tensor.h"

// The base class does every operation on host memory with the host code
// (memcpy/memset, strided_copy.h, reduce_sum.h): CpuDeviceContext is those
// defaults, and a test context over host memory inherits them; a device
// backend overrides every one. Work on a stream: a device enqueues it and
// returns; the host runs Copy and Fill through stream->Enqueue (at once on an
// inline stream, the runtime's) and CopyBox, Accumulate and ScaleByInverse at
// once on the calling thread after the stream's earlier work
// (stream->Synchronize()).
//
// CpuDeviceContext: a CpuAllocator, and CpuInlineStreams (the runtime's:
// kernels run on the actor thread) or, with worker_streams, CpuWorkerStreams
// (tests of the stream and event logic); CpuEvents either way.
//
// Ownership: the context owns its allocator (shared with the buffers it handed
// out); streams and events belong to their caller and must not outlive the
// context.

namespace ofl {

class DeviceContext {
 public:
  virtual ~DeviceContext() = default;
  virtual const Device& device() const = 0;
  virtual Allocator* allocator() = 0;
  virtual std::unique_ptr<Stream> CreateStream() = 0;
  virtual std::unique_ptr<Event> CreateEvent() = 0;

  // Stream-ordered bytes on this device's memory (either side may be host
  // memory): the source feed, boxing's copies and zero fills.
  virtual void Copy(Stream* stream, void* destination, const void* source, int64_t bytes);
  virtual void Fill(Stream* stream, void* destination, int value, int64_t bytes);
  // The same, returning when done (slot zeroing at build, the undo copy,
  // variables set from the host).
  virtual void CopySync(void* destination, const void* source, int64_t bytes);
  virtual void FillSync(void* destination, int value, int64_t bytes);
  // A host tensor holding a copy of `tensor` (host memory or this device's);
  // returns when done.
  Tensor CloneToHost(const Tensor& tensor);
  // Waits for `stream`'s work and returns the first device-side user error
  // its kernels recorded since the last call (core/cuda/cuda_stream.h), else
  // OK.
  virtual Status Finish(Stream* stream);

  // Copies the box `box` at `src_start` of `src` to `dst_start` of `*dst`
  // (both contiguous, one dtype, this device's memory; CHECKs as
  // strided_copy.h's CopyBox).
  virtual void CopyBox(Stream* stream, const Tensor& src, const std::vector<int64_t>& src_start,
                       Tensor* dst, const std::vector<int64_t>& dst_start, const Shape& box);
  // dst[i] += src[i] for n elements (reduce_sum.h's CanAccumulate dtypes;
  // CHECK), the same bits on every backend.
  virtual void Accumulate(Stream* stream, void* dst, const void* src, int64_t n, DataType dtype);
  // data[i] *= T(1) / T(k) for n float32 or float64 elements (CHECK).
  virtual void ScaleByInverse(Stream* stream, void* data, int64_t n, DataType dtype, int64_t k);
};

class CpuDeviceContext final : public DeviceContext {
 public:
  explicit CpuDeviceContext(Device device, bool worker_streams = false);
  const Device& device() const override { return device_; }
  Allocator* allocator() override { return allocator_.get(); }
  std::unique_ptr<Stream> CreateStream() override;
  std::unique_ptr<Event> CreateEvent() override;

 private:
  const Device device_;
  const bool worker_streams_;
  std::shared_ptr<CpuAllocator> allocator_;
};

}  // namespace ofl
