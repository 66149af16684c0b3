// Collective time: ring step counts and latency + bytes / bandwidth.
#include "search/collective_time.h"

#include <glog/logging.h>

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
  if (it != level.collectives.end()) return it->second;
  return {level.bandwidth_bytes_per_s, level.latency_s};
}

double CollectiveSeconds(CollectiveKind kind, double bytes, int64_t group_size,
                         const LinkLevel& level) {
  CHECK(std::isfinite(bytes) && bytes >= 0) << CollectiveKindName(kind) << ": bytes=" << bytes;
  CHECK_GT(level.bandwidth_bytes_per_s, 0) << "level " << level.name;
  int64_t steps = CollectiveSteps(kind, group_size);
  if (bytes == 0 || steps == 0) return 0;  // nothing to move, or a group of one rank
  const CollectiveFigure figure = FigureOf(kind, level);
  return figure.latency_s * static_cast<double>(steps) + bytes / figure.bandwidth_bytes_per_s;
}

}  // namespace ofl
