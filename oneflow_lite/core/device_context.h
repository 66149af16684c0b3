// DeviceContext: what acts for one device in a process: its Allocator (the
// device's memory and its live/peak bytes) and the factory of its Streams
// and Events (oneflow_lite/core/stream.h). The Runtime makes one per local
// rank from the Plan's devices (runtime/device_support.h MakeDeviceContext)
// and one stream per actor thread of the rank. The CUDA context
// (oneflow_lite/core/cuda/cuda_device_context.h) owns a caching allocator and
// wraps cudaStream_t / cudaEvent_t behind the same calls.
//
// Thread safety: every method from any thread.
#pragma once

#include <memory>

#include "oneflow_lite/core/allocator.h"
#include "oneflow_lite/core/stream.h"

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
  // Stream-ordered bytes on this device's memory (the runtime's slot zeroing,
  // fetch clones, undo copy; CUDA: either side may be host memory):
  // enqueued on `stream`, done when the stream reaches them (at once on an
  // inline stream). The default runs memcpy/memset through stream->Enqueue.
  virtual void Copy(Stream* stream, void* destination, const void* source, int64_t bytes);
  virtual void Fill(Stream* stream, void* destination, int value, int64_t bytes);
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

// core's own contexts: CPU devices; any other type is an error naming the
// device ("cuda:0: this build has no cuda backend"). CUDA contexts come from
// oneflow_lite/core/cuda; runtime/device_support.h chooses between the two.
Maybe<std::unique_ptr<DeviceContext>> CreateDeviceContext(const Device& device);

}  // namespace ofl
