#include "oneflow_lite/core/placement.h"

#include <set>

namespace ofl {

Maybe<Placement> Placement::Create(DeviceType type, std::vector<int64_t> ranks, Shape hierarchy) {
  OFL_ENSURE(!ranks.empty(), "placement: no ranks given");
  std::set<int64_t> seen;
  for (int64_t r : ranks) {
    OFL_ENSURE(r >= 0, "placement: rank ", r, " is negative");
    OFL_ENSURE(seen.insert(r).second, "placement: rank ", r, " is repeated");
  }
  if (hierarchy.ndim() == 0) hierarchy = Shape({static_cast<int64_t>(ranks.size())});
  for (int64_t d : hierarchy.dims()) {
    OFL_ENSURE(d >= 1, "placement: hierarchy ", hierarchy, " has an extent below 1");
  }
  OFL_ENSURE(hierarchy.NumElements() == static_cast<int64_t>(ranks.size()), "placement: hierarchy ",
             hierarchy, " covers ", hierarchy.NumElements(), " ranks but ", ranks.size(),
             " were given");
  Placement p;
  p.device_type_ = type;
  p.ranks_ = std::move(ranks);
  p.hierarchy_ = std::move(hierarchy);
  return p;
}

int64_t Placement::IndexOf(int64_t rank) const {
  for (size_t i = 0; i < ranks_.size(); ++i) {
    if (ranks_[i] == rank) return static_cast<int64_t>(i);
  }
  return -1;
}

std::vector<int64_t> Placement::Coordinates(int64_t index) const {
  CHECK(index >= 0 && index < size()) << "rank index " << index << " outside " << ToString();
  std::vector<int64_t> coords(hierarchy_.ndim());
  for (int64_t a = hierarchy_.ndim() - 1; a >= 0; --a) {
    coords[a] = index % hierarchy_[a];
    index /= hierarchy_[a];
  }
  return coords;
}

std::string Placement::ToString() const {
  // A run of more than kRun consecutive ranks is written "first..last", so a
  // 1,024-rank placement reads cpu:[0..1023]; the text stays unique.
  constexpr size_t kRun = 8;
  std::string s = std::string(DeviceTypeName(device_type_)) + ":[";
  for (size_t i = 0; i < ranks_.size();) {
    size_t j = i + 1;
    while (j < ranks_.size() && ranks_[j] == ranks_[j - 1] + 1) ++j;
    if (i > 0) s += ", ";
    if (j - i > kRun) {
      s += std::to_string(ranks_[i]) + ".." + std::to_string(ranks_[j - 1]);
      i = j;
    } else {
      s += std::to_string(ranks_[i]);
      ++i;
    }
  }
  return s + "] hierarchy " + hierarchy_.ToString();
}

}  // namespace ofl
