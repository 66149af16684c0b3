// BoxingMemory: the byte work of one boxing step (runtime/boxing.cpp) on its
// rank's memory, through the rank's DeviceContext: box copies, copies, zero
// fills, sums and scratch buffers, and a communicator made ready for the
// step's stream. One code path for every device: the context does the work.
// Made per step on the boxing actor's thread and used by it only.
#pragma once

#include <optional>

#include "oneflow_lite/core/caching_allocator.h"
#include "oneflow_lite/core/communicator.h"
#include "oneflow_lite/core/cpu_stream.h"
#include "oneflow_lite/core/device_context.h"
#include "runtime/boxing.h"

// On a device the work is enqueued on the step's stream, with scratch from the
// rank's allocator under that stream (so its reuse is ordered by the stream).
// On the host it runs at once on the calling thread: a CPU worker stream is
// synchronised first (the waits for the input), and the context works on an
// inline stream of the step's own; scratch comes from the heap. A host step
// without a context (BoxingStream{}) uses a CpuDeviceContext of its own.

namespace ofl {

class BoxingMemory {
 public:
  explicit BoxingMemory(const BoxingStream& on);

  Maybe<Tensor> Scratch(const Shape& shape, DataType dtype) const;
  void CopyBox(const Tensor& src, const std::vector<int64_t>& src_start, Tensor* dst,
               const std::vector<int64_t>& dst_start, const Shape& box) const;
  // A contiguous copy of one box of `src`.
  Maybe<Tensor> Pack(const Tensor& src, const std::vector<int64_t>& start, const Shape& box) const;
  void Copy(Tensor* dst, const Tensor& src) const;
  void Zero(Tensor* t) const;
  // dst[i] += src[i]; an error for a dtype the host cannot sum.
  Status Add(void* dst, const void* src, int64_t n, DataType dtype) const;
  // Before a collective on the step's buffers: a device-native communicator
  // enqueues it on the step's stream; a host-style one needs the stream's
  // work on the buffers finished.
  Communicator* Ready(Communicator* comm) const;

 private:
  const bool device_;
  DeviceContext* context_;
  Stream* stream_;
  std::optional<CpuDeviceContext> host_context_;  // a host step without a context
  std::optional<CpuInlineStream> inline_;         // a host step's
  std::optional<CachingAllocator::StreamScope> scope_;
};

}  // namespace ofl
