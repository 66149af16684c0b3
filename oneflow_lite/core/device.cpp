#include "oneflow_lite/core/device.h"

#include <limits>

namespace ofl {

const char* DeviceTypeName(DeviceType type) { return type == DeviceType::kCPU ? "cpu" : "cuda"; }

Maybe<DeviceType> ParseDeviceType(const std::string& name) {
  if (name == "cpu") return DeviceType::kCPU;
  if (name == "cuda") return DeviceType::kCUDA;
  return InvalidArgument("unknown device type '", name, "' (expected cpu or cuda)");
}

Maybe<Device> Device::Parse(const std::string& text) {
  const size_t colon = text.find(':');
  Maybe<DeviceType> type = ParseDeviceType(text.substr(0, colon));
  if (!type.ok()) return InvalidArgument("device '", text, "': ", type.status().message());
  if (colon == std::string::npos) return Device{type.value(), 0};
  const std::string digits = text.substr(colon + 1);
  constexpr int64_t kMax = std::numeric_limits<int>::max();
  bool valid = !digits.empty() && digits.size() <= 10;
  int64_t index = 0;
  for (char c : digits) {
    valid = valid && c >= '0' && c <= '9';
    if (valid) index = index * 10 + (c - '0');
  }
  if (!valid || index > kMax) {
    return InvalidArgument("device '", text, "': index '", digits, "' is not an integer in [0, ",
                           kMax, "]");
  }
  return Device{type.value(), static_cast<int>(index)};
}

std::string Device::ToString() const {
  return std::string(DeviceTypeName(type)) + ":" + std::to_string(index);
}

std::ostream& operator<<(std::ostream& out, const Device& device) {
  return out << device.ToString();
}

}  // namespace ofl
