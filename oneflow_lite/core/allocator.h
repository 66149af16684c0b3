// Allocator: the memory of one device. It hands out aligned buffers and keeps
// the bytes live now and their peak, the per-device figures of the memory
// report (DESIGN.md 7b: every allocator reports per-device peak bytes). A
// backend implements AllocateRaw and FreeRaw (the CPU's is aligned_alloc;
// the CUDA caching allocator, caching_allocator.h, sits behind the same two
// calls); the accounting and the shared buffers are here, the same for every
// backend.
//
// Thread safety: every method may be called from any thread; the counters are
// atomic.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "oneflow_lite/core/device.h"
#include "oneflow_lite/core/tensor.h"

// Bytes are counted as requested (not rounded up to the alignment), from the
// allocation to its free.
//
// Ownership: an Allocator is held by a std::shared_ptr (Create functions return
// one); every shared buffer it hands out keeps it alive, so a Tensor may
// outlive the handle it came from.

namespace ofl {

class Allocator : public std::enable_shared_from_this<Allocator> {
 public:
  static constexpr size_t kDefaultAlignment = 64;

  explicit Allocator(Device device) : device_(device) {}
  virtual ~Allocator() = default;
  Allocator(const Allocator&) = delete;
  Allocator& operator=(const Allocator&) = delete;

  const Device& device() const { return device_; }

  // `bytes` (>= 0) aligned to `alignment` (a power of two), counted until
  // Free(pointer, bytes); null when the device is out of memory (nothing is
  // counted then). Zero bytes give a valid, distinct pointer.
  void* Allocate(int64_t bytes, size_t alignment = kDefaultAlignment);
  void Free(void* pointer, int64_t bytes);
  // The same, freed when the last copy of the returned pointer goes. An
  // error names the device and the bytes when the device is out of memory.
  Maybe<std::shared_ptr<void>> AllocateShared(int64_t bytes, size_t alignment = kDefaultAlignment);
  // An uninitialised tensor on device() whose buffer comes from here.
  Maybe<Tensor> NewTensor(const Shape& shape, DataType dtype);

  int64_t live_bytes() const { return live_.load(std::memory_order_relaxed); }
  int64_t peak_bytes() const { return peak_.load(std::memory_order_relaxed); }
  // The peak becomes the bytes live now (the start of a new measurement).
  void ResetPeak() { peak_.store(live_.load()); }

 protected:
  // The backend: a buffer of at least `bytes` bytes aligned to `alignment`,
  // or null; and its release. Called from any thread.
  virtual void* AllocateRaw(int64_t bytes, size_t alignment) = 0;
  virtual void FreeRaw(void* pointer, int64_t bytes) = 0;

 private:
  const Device device_;
  std::atomic<int64_t> live_{0};
  std::atomic<int64_t> peak_{0};
};

// Host memory through std::aligned_alloc (sizes rounded up to the alignment,
// as it requires). One per CPU device: the ranks of a process each count
// their own bytes.
class CpuAllocator final : public Allocator {
 public:
  static std::shared_ptr<CpuAllocator> Create(Device device = {});
  explicit CpuAllocator(Device device) : Allocator(device) {}

 protected:
  void* AllocateRaw(int64_t bytes, size_t alignment) override;
  void FreeRaw(void* pointer, int64_t bytes) override;
};

}  // namespace ofl
