#include "oneflow_lite/core/allocator.h"

#include <algorithm>
#include <cstddef>
#include <cstdlib>

namespace ofl {

namespace {
bool IsPowerOfTwo(size_t n) { return n != 0 && (n & (n - 1)) == 0; }
}  // namespace

void* Allocator::Allocate(int64_t bytes, size_t alignment) {
  CHECK_GE(bytes, 0) << device_ << ": allocation of " << bytes << " bytes";
  CHECK(IsPowerOfTwo(alignment)) << device_ << ": alignment " << alignment
                                 << " is not a power of two";
  void* pointer = AllocateRaw(bytes, alignment);
  if (pointer == nullptr) return nullptr;
  const int64_t now = live_.fetch_add(bytes) + bytes;
  int64_t peak = peak_.load();
  while (now > peak && !peak_.compare_exchange_weak(peak, now)) {
  }
  return pointer;
}

void Allocator::Free(void* pointer, int64_t bytes) {
  if (pointer == nullptr) return;
  FreeRaw(pointer, bytes);
  live_.fetch_sub(bytes);
}

Maybe<std::shared_ptr<void>> Allocator::AllocateShared(int64_t bytes, size_t alignment) {
  std::shared_ptr<Allocator> self = weak_from_this().lock();
  CHECK(self != nullptr) << device_ << ": an Allocator must be owned by a std::shared_ptr";
  void* pointer = Allocate(bytes, alignment);
  if (pointer == nullptr) {
    return Status(StatusCode::kInternal,
                  StrCat(device_, ": out of memory allocating ", bytes, " bytes (", live_bytes(),
                         " bytes live on this device, peak ", peak_bytes(), ")"));
  }
  return std::shared_ptr<void>(pointer, [self, bytes](void* p) { self->Free(p, bytes); });
}

Maybe<Tensor> Allocator::NewTensor(const Shape& shape, DataType dtype) {
  OFL_RETURN_IF_ERROR(CheckAllocation(shape, dtype, "tensor of shape " + shape.ToString()));
  const int64_t bytes = shape.NumElements() * SizeOf(dtype);
  OFL_ASSIGN_OR_RETURN(std::shared_ptr<void> buffer, AllocateShared(bytes));
  void* data = buffer.get();
  return Tensor(shape, dtype, std::move(buffer), data, device_);
}

std::shared_ptr<CpuAllocator> CpuAllocator::Create(Device device) {
  CHECK(device.type == DeviceType::kCPU) << "CpuAllocator for " << device;
  return std::make_shared<CpuAllocator>(device);
}

void* CpuAllocator::AllocateRaw(int64_t bytes, size_t alignment) {
  alignment = std::max(alignment, alignof(std::max_align_t));
  size_t rounded = (static_cast<size_t>(bytes) + alignment - 1) / alignment * alignment;
  return std::aligned_alloc(alignment, rounded == 0 ? alignment : rounded);
}

void CpuAllocator::FreeRaw(void* pointer, int64_t) { std::free(pointer); }

}  // namespace ofl
