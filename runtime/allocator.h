// DeviceAllocator: hands out tensor buffers for one device and records the
// bytes live now and at their peak (DESIGN.md section 2, runtime/). A buffer
// is returned to the count when the last Tensor sharing it goes away. The
// counters are atomic: any thread may allocate and free.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "oneflow_lite/core/tensor.h"

namespace ofl {

class DeviceAllocator {
 public:
  DeviceAllocator() : counters_(std::make_shared<Counters>()) {}

  // An uninitialised, 64-byte aligned tensor whose bytes are counted.
  Tensor Allocate(const Shape& shape, DataType dtype);
  Tensor AllocateZeros(const Shape& shape, DataType dtype);

  int64_t live_bytes() const { return counters_->live.load(); }
  int64_t peak_bytes() const { return counters_->peak.load(); }
  void ResetPeak() { counters_->peak.store(counters_->live.load()); }

 private:
  struct Counters {
    std::atomic<int64_t> live{0};
    std::atomic<int64_t> peak{0};
  };
  // Shared with every buffer's deleter, so a tensor may outlive the allocator.
  std::shared_ptr<Counters> counters_;
};

}  // namespace ofl
