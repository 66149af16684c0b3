// Device: which device a buffer, a task or a stream belongs to, as a value:
// a type (cpu or cuda) and an index, written "cpu:0", "cuda:3". CPU devices
// are virtual: a Plan gives rank r the device "cpu:r", and all of them share
// the host's memory (a CPU tensor of any index is readable by any thread).
// The objects that act for a device (its Allocator, Streams and Events)
// live in oneflow_lite/core/allocator.h, stream.h and device_context.h.
// Immutable value types and pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

#include "oneflow_lite/core/status.h"

namespace ofl {

enum class DeviceType { kCPU, kCUDA };
const char* DeviceTypeName(DeviceType type);  // "cpu", "cuda"
Maybe<DeviceType> ParseDeviceType(const std::string& name);

struct Device {
  DeviceType type = DeviceType::kCPU;
  int index = 0;

  // "cpu:0", "cuda:3"; a bare type ("cpu") is index 0. Errors name the text
  // and what is wrong with it: "device 'gpu:0': unknown device type 'gpu'
  // (expected cpu or cuda)", "device 'cpu:x': index 'x' is not an integer
  // in [0, 2147483647]".
  static Maybe<Device> Parse(const std::string& text);
  std::string ToString() const;
  // Memory the host reads and writes directly (every CPU device).
  bool is_host() const { return type == DeviceType::kCPU; }

  bool operator==(const Device& o) const { return type == o.type && index == o.index; }
  bool operator!=(const Device& o) const { return !(*this == o); }
  bool operator<(const Device& o) const { return type != o.type ? type < o.type : index < o.index; }
};

std::ostream& operator<<(std::ostream& out, const Device& device);

}  // namespace ofl
