#include "oneflow_lite/api/devices.h"

#include "oneflow_lite/core/device_backend.h"

namespace ofl {

Status CheckDeviceUsable(const std::string& device) {
  OFL_ASSIGN_OR_RETURN(Device d, Device::Parse(device));
  if (d.is_host()) return Status::OK();
  return CreateDeviceContext(d).status();
}

int VisibleCudaDevices() { return DeviceCount(DeviceType::kCUDA); }

}  // namespace ofl
