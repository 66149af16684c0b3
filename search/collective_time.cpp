// Collective time: ring step counts, latency + bytes / bandwidth, and the
// measured table's interpolation (collective_time.h).
#include "search/collective_time.h"

#include <glog/logging.h>

#include <algorithm>
#include <cmath>

namespace ofl {

const char* CollectiveKindName(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::kAllReduce:
      return "all_reduce";
    case CollectiveKind::kReduceScatter:
      return "reduce_scatter";
    case CollectiveKind::kAllGather:
      return "all_gather";
    case CollectiveKind::kAllToAll:
      return "all_to_all";
    case CollectiveKind::kSendRecv:
      return "send_recv";
  }
  LOG(FATAL) << "unknown CollectiveKind " << static_cast<int>(kind);
}

int64_t CollectiveSteps(CollectiveKind kind, int64_t group_size) {
  CHECK_GE(group_size, 1) << CollectiveKindName(kind);
  switch (kind) {
    case CollectiveKind::kAllReduce:
      return 2 * (group_size - 1);
    case CollectiveKind::kReduceScatter:
    case CollectiveKind::kAllGather:
    case CollectiveKind::kAllToAll:
      return group_size - 1;
    case CollectiveKind::kSendRecv:
      return 1;
  }
  LOG(FATAL) << "unknown CollectiveKind " << static_cast<int>(kind);
}

CollectiveFigure FigureOf(CollectiveKind kind, const LinkLevel& level) {
  auto it = level.collectives.find(CollectiveKindName(kind));
  if (it != level.collectives.end()) {
    return {it->second.bandwidth_bytes_per_s, it->second.latency_s, {}};
  }
  return {level.bandwidth_bytes_per_s, level.latency_s, {}};
}

double InterpolateCollective(const std::vector<CollectiveSample>& points, double bytes) {
  CHECK_GE(points.size(), 2u);
  CHECK(bytes > 0) << "bytes=" << bytes;
  const CollectiveSample& first = points.front();
  const CollectiveSample& last = points.back();
  if (bytes < first.bytes) {
    const CollectiveSample& second = points[1];
    const double slope = std::clamp((second.seconds - first.seconds) / (second.bytes - first.bytes),
                                    0.0, first.seconds / first.bytes);
    return first.seconds - slope * (first.bytes - bytes);
  }
  if (bytes >= last.bytes) {
    const CollectiveSample& before = points[points.size() - 2];
    double slope = (last.seconds - before.seconds) / (last.bytes - before.bytes);
    if (!(slope > 0)) slope = last.seconds / last.bytes;
    return last.seconds + slope * (bytes - last.bytes);
  }
  // The first point above `bytes`; its predecessor is at or below it.
  auto upper = std::upper_bound(points.begin(), points.end(), bytes,
                                [](double b, const CollectiveSample& p) { return b < p.bytes; });
  const CollectiveSample& hi = *upper;
  const CollectiveSample& lo = *(upper - 1);
  const double exponent = std::log(hi.seconds / lo.seconds) / std::log(hi.bytes / lo.bytes);
  return lo.seconds * std::pow(bytes / lo.bytes, exponent);
}

std::optional<double> TableSeconds(CollectiveKind kind, double bytes, int64_t group_size,
                                   const LinkLevel& level) {
  auto figure = level.collectives.find(CollectiveKindName(kind));
  if (figure == level.collectives.end()) return std::nullopt;
  auto points = figure->second.points.find(group_size);
  if (points == figure->second.points.end()) return std::nullopt;
  return InterpolateCollective(points->second, bytes);
}

double CollectiveSeconds(CollectiveKind kind, double bytes, int64_t group_size,
                         const LinkLevel& level) {
  CHECK(std::isfinite(bytes) && bytes >= 0) << CollectiveKindName(kind) << ": bytes=" << bytes;
  CHECK_GT(level.bandwidth_bytes_per_s, 0) << "level " << level.name;
  int64_t steps = CollectiveSteps(kind, group_size);
  if (bytes == 0 || steps == 0) return 0;  // nothing to move, or a group of one rank
  if (std::optional<double> measured = TableSeconds(kind, bytes, group_size, level)) {
    return *measured;
  }
  const CollectiveFigure figure = FigureOf(kind, level);
  return figure.latency_s * static_cast<double>(steps) + bytes / figure.bandwidth_bytes_per_s;
}

}  // namespace ofl
