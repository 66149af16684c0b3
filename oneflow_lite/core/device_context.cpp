#include "oneflow_lite/core/device_context.h"

#include <cstring>

#include "oneflow_lite/core/cpu_stream.h"

namespace ofl {

void DeviceContext::Copy(Stream* stream, void* destination, const void* source, int64_t bytes) {
  if (bytes == 0) return;
  stream->Enqueue([=] { std::memcpy(destination, source, static_cast<size_t>(bytes)); });
}

void DeviceContext::Fill(Stream* stream, void* destination, int value, int64_t bytes) {
  if (bytes == 0) return;
  stream->Enqueue([=] { std::memset(destination, value, static_cast<size_t>(bytes)); });
}

CpuDeviceContext::CpuDeviceContext(Device device, bool worker_streams)
    : device_(device), worker_streams_(worker_streams), allocator_(CpuAllocator::Create(device)) {}

std::unique_ptr<Stream> CpuDeviceContext::CreateStream() {
  if (worker_streams_) return std::make_unique<CpuWorkerStream>(device_);
  return std::make_unique<CpuInlineStream>(device_);
}

std::unique_ptr<Event> CpuDeviceContext::CreateEvent() { return std::make_unique<CpuEvent>(); }

Maybe<std::unique_ptr<DeviceContext>> CreateDeviceContext(const Device& device) {
  if (device.type == DeviceType::kCPU) {
    return std::unique_ptr<DeviceContext>(std::make_unique<CpuDeviceContext>(device));
  }
  return Unimplemented(device, ": this build has no ", DeviceTypeName(device.type), " backend");
}

}  // namespace ofl
