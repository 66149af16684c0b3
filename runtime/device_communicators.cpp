// The registry of device communicators (device_communicators.h).
#include "runtime/device_communicators.h"

#include <map>
#include <mutex>

namespace ofl {

namespace {

struct Registry {
  std::mutex mu;
  std::map<DeviceType, DeviceCommunicatorFactory> factories;
};

// Process lifetime, never destroyed (factories register before main).
Registry& TheRegistry() {
  static Registry* registry = new Registry;
  return *registry;
}

}  // namespace

bool RegisterDeviceCommunicator(DeviceType type, DeviceCommunicatorFactory factory) {
  CHECK(type != DeviceType::kCPU) << "CPU groups across processes use Gloo";
  Registry& r = TheRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  CHECK(r.factories.emplace(type, std::move(factory)).second)
      << "a second " << DeviceTypeName(type) << " communicator";
  return true;
}

Maybe<std::unique_ptr<Communicator>> MakeDeviceCommunicator(
    TcpStore* store, const std::string& group, const std::vector<int64_t>& members,
    int64_t world_rank, const Device& device, std::chrono::milliseconds timeout) {
  CHECK(!device.is_host()) << "host groups across processes use Gloo";
  DeviceCommunicatorFactory factory;
  {
    Registry& r = TheRegistry();
    std::lock_guard<std::mutex> lock(r.mu);
    auto it = r.factories.find(device.type);
    if (it != r.factories.end()) factory = it->second;
  }
  if (!factory) {
    return Unimplemented(device, ": this build has no ", DeviceTypeName(device.type), " backend");
  }
  return factory(store, group, members, world_rank, device, timeout);
}

}  // namespace ofl
