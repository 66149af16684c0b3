#include "runtime/allocator.h"

#include <cstdlib>
#include <cstring>

namespace ofl {

namespace {
constexpr size_t kAlignment = 64;
}

Tensor DeviceAllocator::Allocate(const Shape& shape, DataType dtype) {
  const int64_t bytes = shape.NumElements() * SizeOf(dtype);
  size_t rounded = ((static_cast<size_t>(bytes) + kAlignment - 1) / kAlignment) * kAlignment;
  void* p = std::aligned_alloc(kAlignment, rounded == 0 ? kAlignment : rounded);
  CHECK(p != nullptr) << "out of host memory allocating " << bytes << " bytes";
  const int64_t now = counters_->live.fetch_add(bytes) + bytes;
  int64_t peak = counters_->peak.load();
  while (now > peak && !counters_->peak.compare_exchange_weak(peak, now)) {
  }
  std::shared_ptr<Counters> counters = counters_;
  std::shared_ptr<void> owner(p, [counters, bytes](void* q) {
    counters->live.fetch_sub(bytes);
    std::free(q);
  });
  return Tensor(shape, dtype, owner, p);
}

Tensor DeviceAllocator::AllocateZeros(const Shape& shape, DataType dtype) {
  Tensor t = Allocate(shape, dtype);
  if (t.nbytes() > 0) std::memset(t.raw(), 0, t.nbytes());
  return t;
}

}  // namespace ofl
