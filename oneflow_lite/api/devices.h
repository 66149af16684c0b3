// Devices as the Python layer sees them: whether this process can use a
// device ("cpu", "cuda:1"), and how many CUDA devices it sees. Errors name
// the device: "cuda:0: no CUDA device", "cuda:0: this build has no cuda
// backend", or Device::Parse's error for a malformed name. Thread-safe.
#pragma once

#include <string>

#include "oneflow_lite/core/status.h"

namespace ofl {

// OK when this process can make `device`'s context (CPU always).
Status CheckDeviceUsable(const std::string& device);
// CUDA devices this process sees; 0 in a build without the CUDA backend.
int VisibleCudaDevices();

}  // namespace ofl
