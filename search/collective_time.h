// Collective time: the seconds one collective takes on one link level
// (DESIGN.md section 5), seconds = latency * steps + bytes / bandwidth, or a
// level's calibrated figures for the kind, or its table of measured times
// (interpolated log-log). The one formula of the project:
// graph/ computes the bytes the busiest rank sends and asks this for the
// seconds. Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "search/cluster.h"

// Collective time: the seconds one collective takes on one link level
// (DESIGN.md section 5). The one formula of the project: graph/ computes the
// bytes the busiest rank sends (its boxing planner) and asks this for the
// seconds; nothing else writes its own formula.
//   seconds = latency * steps + bytes / bandwidth
// with ring step counts for a group of p ranks: all-reduce 2(p-1),
// reduce-scatter and all-gather p-1, all-to-all p-1, send/recv 1.
// A level that lists the kind's own figures (calibrated, cluster.proto
// CollectiveFigure) uses those instead of its latency and bandwidth.
// When those figures hold measured points (CollectivePoint: bytes the
// busiest rank sent, seconds) for exactly the group size asked, the seconds
// come from that table instead (TableSeconds, InterpolateCollective), with
// points (b_i, t_i) sorted by bytes:
//   b_0 <= b <= b_n: piecewise linear in (log bytes, log seconds) between
//     the two neighbouring points (a measured size gives its seconds);
//   b < b_0: the straight line (in bytes, not logs) through the two
//     smallest points, its slope clamped to [0, t_0 / b_0] (never cheaper
//     for more bytes, never below 0 at 0 bytes): t_0 - slope * (b_0 - b);
//   b > b_n: the last point plus the bandwidth of the two largest points,
//     t_n + (b - b_n) * (t_n - t_{n-1}) / (b_n - b_{n-1}), or the largest
//     point's own rate t_n / b_n when that slope is not positive.
// Other group sizes use the latency and bandwidth (the points were measured
// on one ring; they say nothing of a longer one).
// Zero bytes, or a collective on one rank, cost nothing. Pure functions;
// thread-safe.

namespace ofl {

enum class CollectiveKind { kAllReduce, kReduceScatter, kAllGather, kAllToAll, kSendRecv };

const char* CollectiveKindName(CollectiveKind kind);  // "all_reduce", ...

// Latency steps of `kind` on a ring of `group_size` ranks (CHECKs >= 1).
int64_t CollectiveSteps(CollectiveKind kind, int64_t group_size);

// The latency and bandwidth `kind` runs at on `level` (without its points).
CollectiveFigure FigureOf(CollectiveKind kind, const LinkLevel& level);

// The table rule above on `points` (two or more, sorted by bytes, distinct,
// bytes and seconds > 0: CHECKed) at `bytes` > 0.
double InterpolateCollective(const std::vector<CollectiveSample>& points, double bytes);

// The seconds of `kind` from `level`'s measured points of `group_size`
// ranks at `bytes` (> 0); std::nullopt when the level has none for them.
std::optional<double> TableSeconds(CollectiveKind kind, double bytes, int64_t group_size,
                                   const LinkLevel& level);

// Seconds for `kind` when the busiest rank sends `bytes` (>= 0, finite) in
// a group of `group_size` ranks over `level` (the level the group spans,
// Cluster::AxisLevels). Internal inputs: broken ones are CHECK failures.
double CollectiveSeconds(CollectiveKind kind, double bytes, int64_t group_size,
                         const LinkLevel& level);

}  // namespace ofl
