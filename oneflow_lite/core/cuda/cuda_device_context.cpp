// CudaAllocator, CudaDeviceContext and CreateCudaDeviceContext
// (cuda_device_context.h).
#include "oneflow_lite/core/cuda/cuda_device_context.h"

#include "oneflow_lite/core/cuda/cuda_check.h"

namespace ofl {

namespace {

CachingAllocator::Backend CudaBackend(int ordinal) {
  CachingAllocator::Backend backend;
  backend.allocate = [ordinal](int64_t bytes) -> void* {
    CudaDeviceGuard guard(ordinal);
    void* pointer = nullptr;
    const cudaError_t status = cudaMalloc(&pointer, static_cast<size_t>(bytes));
    if (status == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();  // out of memory is the caller's error, not sticky
      return nullptr;
    }
    OFL_CUDA_CHECK(status);
    return pointer;
  };
  backend.free = [ordinal](void* pointer) {
    CudaDeviceGuard guard(ordinal);
    OFL_CUDA_CHECK(cudaFree(pointer));
  };
  backend.create_event = [ordinal] { return std::make_unique<CudaEvent>(ordinal); };
  backend.alignment = 256;
  return backend;
}

}  // namespace

CudaAllocator::CudaAllocator(Device device, int ordinal)
    : CachingAllocator(device, CudaBackend(ordinal)), ordinal_(ordinal) {}

std::shared_ptr<CudaAllocator> CudaAllocator::Create(Device device, int ordinal) {
  CHECK(device.type == DeviceType::kCUDA) << "CudaAllocator for " << device;
  return std::make_shared<CudaAllocator>(device, ordinal);
}

CudaDeviceContext::CudaDeviceContext(Device device, int ordinal)
    : device_(device), ordinal_(ordinal), allocator_(CudaAllocator::Create(device, ordinal)) {}

std::unique_ptr<Stream> CudaDeviceContext::CreateStream() {
  return std::make_unique<CudaDeviceStream>(device_, ordinal_);
}

std::unique_ptr<Event> CudaDeviceContext::CreateEvent() {
  return std::make_unique<CudaEvent>(ordinal_);
}

void CudaDeviceContext::Copy(Stream* stream, void* destination, const void* source, int64_t bytes) {
  if (bytes == 0) return;
  CudaDeviceGuard guard(ordinal_);
  OFL_CUDA_CHECK(cudaMemcpyAsync(destination, source, static_cast<size_t>(bytes), cudaMemcpyDefault,
                                 CudaStreamOf(stream)));
}

void CudaDeviceContext::Fill(Stream* stream, void* destination, int value, int64_t bytes) {
  if (bytes == 0) return;
  CudaDeviceGuard guard(ordinal_);
  OFL_CUDA_CHECK(
      cudaMemsetAsync(destination, value, static_cast<size_t>(bytes), CudaStreamOf(stream)));
}

int CudaOrdinalOf(const Device& device) {
  const int count = CudaDeviceCount();
  CHECK_GT(count, 0) << device << ": no CUDA device";
  return device.index % count;
}

Maybe<std::unique_ptr<DeviceContext>> CreateCudaDeviceContext(const Device& device) {
  if (device.type != DeviceType::kCUDA) {
    return InvalidArgument(device, ": not a CUDA device");
  }
  const int count = CudaDeviceCount();
  if (count == 0) return Status(StatusCode::kUnimplemented, StrCat(device, ": no CUDA device"));
  return std::unique_ptr<DeviceContext>(
      std::make_unique<CudaDeviceContext>(device, device.index % count));
}

}  // namespace ofl
