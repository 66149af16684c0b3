// The backend registry (device_backend.h).
#include "oneflow_lite/core/device_backend.h"

#include <cstring>
#include <map>
#include <mutex>
#include <optional>

#include "oneflow_lite/core/reduce_sum.h"

namespace ofl {

namespace {

struct Registry {
  std::mutex mu;
  std::map<DeviceType, DeviceBackend> backends;
};

// Process lifetime, never destroyed (backends register before main).
Registry& TheRegistry() {
  static Registry* registry = new Registry;
  return *registry;
}

std::optional<DeviceBackend> Find(DeviceType type) {
  Registry& r = TheRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.backends.find(type);
  if (it == r.backends.end()) return std::nullopt;
  return it->second;
}

Status NoBackend(const Device& device) {
  return Unimplemented(device, ": this build has no ", DeviceTypeName(device.type), " backend");
}

}  // namespace

GroupMemory HostGroupMemory() {
  GroupMemory memory;
  memory.copy = [](void* dst, const void* src, int64_t bytes) {
    if (bytes > 0) std::memcpy(dst, src, static_cast<size_t>(bytes));
  };
  memory.accumulate = [](void* dst, const void* init, const std::vector<const void*>& srcs,
                         int64_t n, DataType dtype) { Accumulate(dst, init, srcs, n, dtype); };
  return memory;
}

bool RegisterDeviceBackend(DeviceType type, DeviceBackend backend) {
  CHECK(type != DeviceType::kCPU) << "the CPU backend is built in";
  Registry& r = TheRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  CHECK(r.backends.emplace(type, std::move(backend)).second)
      << "a second " << DeviceTypeName(type) << " backend";
  return true;
}

Maybe<std::unique_ptr<DeviceContext>> CreateDeviceContext(const Device& device) {
  if (device.type == DeviceType::kCPU) {
    return std::unique_ptr<DeviceContext>(std::make_unique<CpuDeviceContext>(device));
  }
  std::optional<DeviceBackend> backend = Find(device.type);
  if (!backend) return NoBackend(device);
  return backend->create_context(device);
}

int DeviceCount(DeviceType type) {
  if (type == DeviceType::kCPU) return 1;
  std::optional<DeviceBackend> backend = Find(type);
  return backend ? backend->device_count() : 0;
}

Maybe<GroupMemory> DeviceGroupMemory(const std::vector<Device>& devices) {
  CHECK(!devices.empty());
  const Device& first = devices.front();
  if (first.is_host()) return HostGroupMemory();
  std::optional<DeviceBackend> backend = Find(first.type);
  if (!backend) return NoBackend(first);
  return backend->group_memory(devices);
}

}  // namespace ofl
