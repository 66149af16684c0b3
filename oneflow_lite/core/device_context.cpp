// DeviceContext's host defaults and CpuDeviceContext (device_context.h).
#include "oneflow_lite/core/device_context.h"

#include <cstring>

#include "oneflow_lite/core/cpu_stream.h"
#include "oneflow_lite/core/reduce_sum.h"
#include "oneflow_lite/core/strided_copy.h"

namespace ofl {

void DeviceContext::Copy(Stream* stream, void* destination, const void* source, int64_t bytes) {
  if (bytes == 0) return;
  stream->Enqueue([=] { std::memcpy(destination, source, static_cast<size_t>(bytes)); });
}

void DeviceContext::Fill(Stream* stream, void* destination, int value, int64_t bytes) {
  if (bytes == 0) return;
  stream->Enqueue([=] { std::memset(destination, value, static_cast<size_t>(bytes)); });
}

void DeviceContext::CopySync(void* destination, const void* source, int64_t bytes) {
  if (bytes == 0) return;
  std::memcpy(destination, source, static_cast<size_t>(bytes));
}

void DeviceContext::FillSync(void* destination, int value, int64_t bytes) {
  if (bytes == 0) return;
  std::memset(destination, value, static_cast<size_t>(bytes));
}

Tensor DeviceContext::CloneToHost(const Tensor& tensor) {
  if (tensor.device().is_host()) return tensor.Clone();
  CHECK(tensor.device() == device())
      << "a clone of a " << tensor.device() << " tensor by the " << device() << " context";
  Tensor host(tensor.shape(), tensor.dtype());
  CopySync(host.raw(), tensor.raw(), tensor.nbytes());
  return host;
}

Status DeviceContext::Finish(Stream* stream) {
  stream->Synchronize();
  return Status::OK();
}

void DeviceContext::CopyBox(Stream* stream, const Tensor& src,
                            const std::vector<int64_t>& src_start, Tensor* dst,
                            const std::vector<int64_t>& dst_start, const Shape& box) {
  stream->Synchronize();
  ::ofl::CopyBox(src, src_start, dst, dst_start, box);
}

void DeviceContext::Accumulate(Stream* stream, void* dst, const void* src, int64_t n,
                               DataType dtype) {
  CHECK(CanAccumulate(dtype)) << "no sum of " << DataTypeName(dtype);
  stream->Synchronize();
  ::ofl::Accumulate(dst, nullptr, {src}, n, dtype);
}

void DeviceContext::ScaleByInverse(Stream* stream, void* data, int64_t n, DataType dtype,
                                   int64_t k) {
  stream->Synchronize();
  ::ofl::ScaleByInverse(data, n, dtype, k);
}

CpuDeviceContext::CpuDeviceContext(Device device, bool worker_streams)
    : device_(device), worker_streams_(worker_streams), allocator_(CpuAllocator::Create(device)) {}

std::unique_ptr<Stream> CpuDeviceContext::CreateStream() {
  if (worker_streams_) return std::make_unique<CpuWorkerStream>(device_);
  return std::make_unique<CpuInlineStream>(device_);
}

std::unique_ptr<Event> CpuDeviceContext::CreateEvent() { return std::make_unique<CpuEvent>(); }

}  // namespace ofl
