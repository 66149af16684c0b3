// ComputeTable: checking the entries and interpolating them (compute_table.h).
#include "search/compute_table.h"

#include <glog/logging.h>

#include <algorithm>
#include <cmath>
#include <set>

namespace ofl {

namespace {

bool Positive(double v) { return std::isfinite(v) && v > 0; }

// Log-log slope of the segment from a to b.
double Slope(const ComputePoint& a, const ComputePoint& b) {
  return std::log(b.seconds / a.seconds) / std::log(b.flops / a.flops);
}

double AlongSlope(const ComputePoint& from, double slope, double flops) {
  return from.seconds * std::pow(flops / from.flops, slope);
}

}  // namespace

double InterpolateSeconds(const std::vector<ComputePoint>& points, double flops) {
  CHECK(!points.empty());
  if (!(flops > 0)) return 0.0;
  const ComputePoint& last = points.back();
  if (points.size() == 1 || flops >= last.flops) return AlongSlope(last, 1.0, flops);
  if (flops <= points.front().flops) {
    const double slope = std::clamp(Slope(points[0], points[1]), 0.0, 1.0);
    return AlongSlope(points.front(), slope, flops);
  }
  // The first point above flops; its predecessor is at or below it.
  auto upper = std::upper_bound(points.begin(), points.end(), flops,
                                [](double f, const ComputePoint& p) { return f < p.flops; });
  const ComputePoint& hi = *upper;
  const ComputePoint& lo = *(upper - 1);
  return AlongSlope(lo, Slope(lo, hi), flops);
}

Maybe<ComputeTable> ComputeTable::FromProto(const std::string& cluster_name,
                                            const proto::DeviceSpec& device) {
  ComputeTable table;
  for (int i = 0; i < device.compute_size(); ++i) {
    const proto::ComputeEntry& e = device.compute(i);
    const std::string where = StrCat("cluster '", cluster_name, "': device.compute[", i, "]");
    OFL_ENSURE(!e.op_type().empty(), where, ": op_type is empty");
    Maybe<DataType> dtype = ParseDataType(e.dtype());
    OFL_ENSURE(dtype.ok(), where, " (", e.op_type(), "): dtype='", e.dtype(),
               "' is not a dtype name");
    OFL_ENSURE(Positive(e.flops()), where, " (", e.op_type(), "): flops=", e.flops(),
               " must be > 0");
    OFL_ENSURE(Positive(e.seconds()), where, " (", e.op_type(), "): seconds=", e.seconds(),
               " must be > 0");
    if (!e.shape().empty()) {
      const bool fresh =
          table.exact_.emplace(std::make_tuple(e.op_type(), dtype.value(), e.shape()), e.seconds())
              .second;
      OFL_ENSURE(fresh, where, " (", e.op_type(), " ", e.dtype(), "): shape='", e.shape(),
                 "' is listed twice");
      continue;
    }
    std::vector<ComputePoint>& curve = table.curves_[{e.op_type(), dtype.value()}];
    for (const ComputePoint& p : curve) {
      OFL_ENSURE(p.flops != e.flops(), where, " (", e.op_type(), " ", e.dtype(),
                 "): flops=", e.flops(), " is listed twice");
    }
    curve.push_back({e.flops(), e.seconds()});
  }
  for (auto& [key, curve] : table.curves_) {
    std::sort(curve.begin(), curve.end(),
              [](const ComputePoint& a, const ComputePoint& b) { return a.flops < b.flops; });
  }
  std::set<int64_t> seen;
  for (int i = 0; i < device.contention_size(); ++i) {
    const proto::Contention& c = device.contention(i);
    const std::string where = StrCat("cluster '", cluster_name, "': device.contention[", i, "]");
    OFL_ENSURE(c.devices() >= 2, where, ": devices=", c.devices(), " must be >= 2");
    OFL_ENSURE(seen.insert(c.devices()).second, where, ": devices=", c.devices(),
               " is listed twice");
    OFL_ENSURE(Positive(c.factor()), where, ": factor=", c.factor(), " must be > 0");
    table.contention_.emplace_back(c.devices(), c.factor());
  }
  std::sort(table.contention_.begin(), table.contention_.end());
  return table;
}

bool ComputeTable::Has(const std::string& op_type, DataType dtype) const {
  return curves_.count({op_type, dtype}) > 0;
}

std::optional<double> ComputeTable::Seconds(const std::string& op_type, DataType dtype,
                                            double flops) const {
  auto it = curves_.find({op_type, dtype});
  if (it == curves_.end()) return std::nullopt;
  return InterpolateSeconds(it->second, flops);
}

std::optional<double> ComputeTable::ExactSeconds(const std::string& op_type, DataType dtype,
                                                 const std::string& shape) const {
  auto it = exact_.find(std::make_tuple(op_type, dtype, shape));
  if (it == exact_.end()) return std::nullopt;
  return it->second;
}

double ComputeTable::Contention(int64_t devices) const {
  if (devices <= 1 || contention_.empty()) return 1.0;
  std::pair<int64_t, double> below{1, 1.0};
  for (const auto& [k, factor] : contention_) {
    if (k == devices) return factor;
    if (k > devices) {
      const double t =
          static_cast<double>(devices - below.first) / static_cast<double>(k - below.first);
      return below.second + t * (factor - below.second);
    }
    below = {k, factor};
  }
  return below.second * static_cast<double>(devices) / static_cast<double>(below.first);
}

std::vector<std::string> ComputeTable::OpTypes() const {
  std::set<std::string> types;
  for (const auto& [key, curve] : curves_) types.insert(key.first);
  return {types.begin(), types.end()};
}

}  // namespace ofl
