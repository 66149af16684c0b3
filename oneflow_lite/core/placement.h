// Placement: the device type, the ranks a tensor or op lives on, and their
// hierarchy, e.g. 8 ranks as [2, 4] = 2 nodes x 4 devices (DESIGN.md 3).
// Built through Create(), which rejects repeated ranks and a hierarchy whose
// product differs from the rank count. Immutable value type; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "oneflow_lite/core/device.h"
#include "oneflow_lite/core/shape.h"

namespace ofl {

class Placement {
 public:
  Placement() = default;
  // An empty hierarchy means flat: [ranks.size()].
  static Maybe<Placement> Create(DeviceType type, std::vector<int64_t> ranks, Shape hierarchy = {});

  DeviceType device_type() const { return device_type_; }
  const std::vector<int64_t>& ranks() const { return ranks_; }
  const Shape& hierarchy() const { return hierarchy_; }
  int64_t size() const { return static_cast<int64_t>(ranks_.size()); }
  // Position of `rank` in ranks(), or -1.
  int64_t IndexOf(int64_t rank) const;
  // Coordinates of the rank at `index` in the hierarchy (row-major).
  std::vector<int64_t> Coordinates(int64_t index) const;
  // "cpu:[0, 1, 2, 3] hierarchy (2, 2)"; runs of more than 8 consecutive
  // ranks as "first..last": "cpu:[0..1023] hierarchy (128, 8)".
  std::string ToString() const;

  bool operator==(const Placement& o) const {
    return device_type_ == o.device_type_ && ranks_ == o.ranks_ && hierarchy_ == o.hierarchy_;
  }
  bool operator!=(const Placement& o) const { return !(*this == o); }

 private:
  DeviceType device_type_ = DeviceType::kCPU;
  std::vector<int64_t> ranks_;
  Shape hierarchy_;
};

}  // namespace ofl
