// CudaAllocator, CudaDeviceContext, CreateCudaDeviceContext and
// CudaGroupMemory (cuda_device_context.h), and the CUDA backend's
// registration.
#include "oneflow_lite/core/cuda/cuda_device_context.h"

#include "oneflow_lite/core/cuda/cuda_check.h"
#include "oneflow_lite/core/cuda/device_kernels.h"
#include "oneflow_lite/core/strided_copy.h"

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

void CudaDeviceContext::CopySync(void* destination, const void* source, int64_t bytes) {
  if (bytes == 0) return;
  CudaDeviceGuard guard(ordinal_);
  OFL_CUDA_CHECK(
      cudaMemcpyAsync(destination, source, static_cast<size_t>(bytes), cudaMemcpyDefault, nullptr));
  OFL_CUDA_CHECK(cudaStreamSynchronize(nullptr));
}

void CudaDeviceContext::FillSync(void* destination, int value, int64_t bytes) {
  if (bytes == 0) return;
  CudaDeviceGuard guard(ordinal_);  // cudaMemset may return early too
  OFL_CUDA_CHECK(cudaMemsetAsync(destination, value, static_cast<size_t>(bytes), nullptr));
  OFL_CUDA_CHECK(cudaStreamSynchronize(nullptr));
}

Status CudaDeviceContext::Finish(Stream* stream) {
  auto* cuda = dynamic_cast<CudaStream*>(stream);
  CHECK(cuda != nullptr) << device_ << ": Finish of a stream that is not a CUDA stream";
  return cuda->TakeDeviceError();
}

void CudaDeviceContext::CopyBox(Stream* stream, const Tensor& src,
                                const std::vector<int64_t>& src_start, Tensor* dst,
                                const std::vector<int64_t>& dst_start, const Shape& box) {
  const BoxCopy b = LayoutBoxCopy(src, src_start, *dst, dst_start, box);
  if (box.NumElements() == 0) return;
  const int64_t es = SizeOf(src.dtype());
  CudaDeviceGuard guard(ordinal_);
  cuda::StridedCopy(box.dims(), es, static_cast<const char*>(src.raw()) + b.src_offset * es,
                    b.src_strides, static_cast<char*>(dst->raw()) + b.dst_offset * es,
                    b.dst_strides, CudaStreamOf(stream));
}

void CudaDeviceContext::Accumulate(Stream* stream, void* dst, const void* src, int64_t n,
                                   DataType dtype) {
  if (n == 0) return;
  CudaDeviceGuard guard(ordinal_);
  cuda::Accumulate(dst, nullptr, {src}, n, dtype, CudaStreamOf(stream));
}

void CudaDeviceContext::ScaleByInverse(Stream* stream, void* data, int64_t n, DataType dtype,
                                       int64_t k) {
  CudaDeviceGuard guard(ordinal_);
  cuda::ScaleByInverse(data, n, dtype, k, CudaStreamOf(stream));
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

namespace {

// Runs `enqueue` on a fresh non-blocking stream of GPU `ordinal` and waits.
void OnOwnStream(int ordinal, const std::function<void(cudaStream_t)>& enqueue) {
  CudaDeviceGuard guard(ordinal);
  cudaStream_t stream;
  OFL_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  enqueue(stream);
  OFL_CUDA_CHECK(cudaStreamSynchronize(stream));
  OFL_CUDA_CHECK(cudaStreamDestroy(stream));
}

}  // namespace

Maybe<GroupMemory> CudaGroupMemory(const std::vector<Device>& devices) {
  CHECK(!devices.empty());
  const Device& first = devices.front();
  if (CudaDeviceCount() == 0) return Unimplemented(first, ": no CUDA device");
  const int ordinal = CudaOrdinalOf(first);
  for (const Device& d : devices) {
    OFL_ENSURE(CudaOrdinalOf(d) == ordinal, "an in-process boxing group has ", first, " on GPU ",
               ordinal, " and ", d, " on GPU ", CudaOrdinalOf(d),
               ": the in-process CUDA group needs one GPU (run one process per GPU)");
  }
  GroupMemory memory;
  memory.copy = [ordinal](void* dst, const void* src, int64_t bytes) {
    if (bytes == 0) return;
    OnOwnStream(ordinal, [&](cudaStream_t stream) {
      OFL_CUDA_CHECK(
          cudaMemcpyAsync(dst, src, static_cast<size_t>(bytes), cudaMemcpyDefault, stream));
    });
  };
  memory.accumulate = [ordinal](void* dst, const void* init, const std::vector<const void*>& srcs,
                                int64_t n, DataType dtype) {
    if (n == 0) return;
    OnOwnStream(ordinal,
                [&](cudaStream_t stream) { cuda::Accumulate(dst, init, srcs, n, dtype, stream); });
  };
  return memory;
}

namespace {

DeviceBackend TheCudaDeviceBackend() {
  DeviceBackend backend;
  backend.create_context = CreateCudaDeviceContext;
  backend.device_count = CudaDeviceCount;
  backend.group_memory = CudaGroupMemory;
  return backend;
}

}  // namespace

}  // namespace ofl

// Named so that the link of every consumer keeps this object file, and with
// it the registration (oneflow_lite/core/cuda/CMakeLists.txt, --undefined).
extern "C" const bool ofl_cuda_backend_registered =
    ofl::RegisterDeviceBackend(ofl::DeviceType::kCUDA, ofl::TheCudaDeviceBackend());
