// CachingAllocator: an Allocator that keeps freed buffers for reuse instead
// of returning them to the device (cudaMalloc and cudaFree synchronise the
// whole device; a training step frees and allocates the same sizes again).
// Backend-neutral: the raw memory and the events come from a Backend, so the
// CUDA allocator (core/cuda/cuda_device_context.h) is this class over
// cudaMalloc/cudaFree and cudaEvent_t, and CI tests the logic on the CPU
// with worker streams and CPU events (tests/cpp/core/caching_allocator_test).
//
// Thread safety: every method from any thread (one mutex); StreamScope is
// per thread.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

#include "oneflow_lite/core/allocator.h"
#include "oneflow_lite/core/stream.h"

// Bins: a request is rounded up to its bin (BinBytes: multiples of 512 bytes
// below 1 MiB, then four bins per power of two, so at most 25 % is wasted); a
// freed buffer is reused only for a request of the same bin. Streams: every
// buffer belongs to the stream that was current on the allocating thread
// (StreamScope; none outside any scope). A freed buffer is reused at once by
// allocations under the same stream: that stream's later work runs after the
// earlier user's work. A buffer that other streams used too must be named with
// RecordStream(pointer, stream): when it is freed, an event is recorded on each
// such stream, and the buffer becomes reusable only when every one of those
// events is reached (polled at the next Allocate). Buffers allocated outside
// any StreamScope must be freed only after the host synchronised their users
// (the runtime's registers are freed after its streams stopped). Accounting:
// live and peak bytes (the base class: bytes as requested) are the memory
// report's figures; reserved_bytes() is what the backend holds (in use, cached
// or pending). When the backend refuses, the cache is emptied (pending buffers
// waited for) and the request tried once more; then Allocate returns null and
// AllocateShared's error names the device and the bytes. The destructor
// waits for pending events and frees everything.

namespace ofl {

class CachingAllocator : public Allocator {
 public:
  struct Backend {
    std::function<void*(int64_t bytes)> allocate;  // null when out of memory
    std::function<void(void* pointer)> free;
    std::function<std::unique_ptr<Event>()> create_event;
    size_t alignment = 256;  // every pointer `allocate` returns is aligned to this
  };

  // Sets the calling thread's current stream for allocations until it goes.
  class StreamScope {
   public:
    explicit StreamScope(Stream* stream);
    ~StreamScope();
    StreamScope(const StreamScope&) = delete;
    StreamScope& operator=(const StreamScope&) = delete;

   private:
    Stream* previous_;
  };
  static Stream* CurrentStream();

  CachingAllocator(Device device, Backend backend);
  ~CachingAllocator() override;

  // The bin `bytes` is served from (>= bytes, >= 512).
  static int64_t BinBytes(int64_t bytes);

  // `pointer` (live, from this allocator) is used on `stream` as well.
  void RecordStream(void* pointer, Stream* stream);
  // Returns every cached (free) buffer to the backend; waits for pending ones.
  void EmptyCache();

  int64_t reserved_bytes() const;       // held from the backend
  int64_t cached_bytes() const;         // of those, free or pending (not live)
  int64_t backend_allocations() const;  // calls of backend.allocate so far

 protected:
  void* AllocateRaw(int64_t bytes, size_t alignment) override;
  void FreeRaw(void* pointer, int64_t bytes) override;

 private:
  struct Block {
    int64_t bin = 0;
    Stream* stream = nullptr;
    std::vector<Stream*> other_streams;  // RecordStream's
  };
  struct Pending {
    void* pointer;
    Block block;
    std::vector<std::unique_ptr<Event>> events;
  };
  using FreeKey = std::pair<Stream*, int64_t>;  // (stream, bin)

  // Moves pending blocks whose events were reached to the free lists
  // (`wait`: waits for all of them). Under mu_.
  void ReapPending(bool wait);
  void ReleaseFree();                  // under mu_
  std::unique_ptr<Event> TakeEvent();  // under mu_

  const Backend backend_;
  mutable std::mutex mu_;
  std::unordered_map<void*, Block> live_blocks_;
  std::map<FreeKey, std::vector<void*>> free_;
  std::vector<Pending> pending_;
  std::vector<std::unique_ptr<Event>> spare_events_;
  int64_t reserved_ = 0;
  int64_t cached_ = 0;
  int64_t backend_allocations_ = 0;
};

}  // namespace ofl
