// Collective time: the seconds one collective takes on one link level
// (DESIGN.md section 5), seconds = latency * steps + bytes / bandwidth, or a
// level's calibrated figures for the kind. The one formula of the project:
// graph/ computes the bytes the busiest rank sends and asks this for the
// seconds. Pure functions; thread-safe.
#pragma once

#include <cstdint>

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
// Zero bytes, or a collective on one rank, cost nothing. Pure functions;
// thread-safe.

namespace ofl {

enum class CollectiveKind { kAllReduce, kReduceScatter, kAllGather, kAllToAll, kSendRecv };

const char* CollectiveKindName(CollectiveKind kind);  // "all_reduce", ...

// Latency steps of `kind` on a ring of `group_size` ranks (CHECKs >= 1).
int64_t CollectiveSteps(CollectiveKind kind, int64_t group_size);

// The latency and bandwidth `kind` runs at on `level`.
CollectiveFigure FigureOf(CollectiveKind kind, const LinkLevel& level);

// Seconds for `kind` when the busiest rank sends `bytes` (>= 0, finite) in
// a group of `group_size` ranks over `level` (the level the group spans,
// Cluster::AxisLevels). Internal inputs: broken ones are CHECK failures.
double CollectiveSeconds(CollectiveKind kind, double bytes, int64_t group_size,
                         const LinkLevel& level);

}  // namespace ofl
