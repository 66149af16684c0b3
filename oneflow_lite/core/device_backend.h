// The registry of device backends: per DeviceType, what makes the
// DeviceContext (device_context.h) of one of its devices, how many devices
// this process sees, and the memory of an in-process group of its devices.
// The CPU backend is built in; a backend library registers its own during
// static initialisation (core/cuda does for CUDA), so code above core reaches
// any device through these calls and never names a backend.
// Thread safety: a mutex guards the table; every call from any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "oneflow_lite/core/device_context.h"

namespace ofl {

// How an in-process group (runtime/inprocess_communicator.h) copies and sums
// its ranks' buffers; both synchronous.
struct GroupMemory {
  std::function<void(void* dst, const void* src, int64_t bytes)> copy;
  // As reduce_sum.h's Accumulate.
  std::function<void(void* dst, const void* init, const std::vector<const void*>& srcs, int64_t n,
                     DataType dtype)>
      accumulate;
};
GroupMemory HostGroupMemory();  // memcpy and reduce_sum.h's Accumulate

struct DeviceBackend {
  std::function<Maybe<std::unique_ptr<DeviceContext>>(const Device&)> create_context;
  std::function<int()> device_count;
  // `devices`: the members of one group, all of this type (not empty).
  std::function<Maybe<GroupMemory>(const std::vector<Device>& devices)> group_memory;
};

// Registers the backend of `type` (CHECK: only once); returns true, for a
// namespace-scope initialiser.
bool RegisterDeviceBackend(DeviceType type, DeviceBackend backend);

// The context of `device`: a CpuDeviceContext for CPU devices; else its
// backend's, or an error naming the device ("cuda:0: this build has no cuda
// backend"; the backend's own, e.g. "cuda:0: no CUDA device").
Maybe<std::unique_ptr<DeviceContext>> CreateDeviceContext(const Device& device);

// The devices of `type` this process sees: 0 without its backend.
int DeviceCount(DeviceType type);

// The memory of an in-process group whose members are `devices` (one type):
// HostGroupMemory() for CPU; else the backend's, or an error as
// CreateDeviceContext's.
Maybe<GroupMemory> DeviceGroupMemory(const std::vector<Device>& devices);

}  // namespace ofl
