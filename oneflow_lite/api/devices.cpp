#include "oneflow_lite/api/devices.h"

#include "runtime/device_support.h"

namespace ofl {

Status CheckDeviceUsable(const std::string& device) {
  OFL_ASSIGN_OR_RETURN(Device d, Device::Parse(device));
  if (d.is_host()) return Status::OK();
  return MakeDeviceContext(d).status();
}

int VisibleCudaDevices() { return CudaDevicesVisible(); }

}  // namespace ofl
