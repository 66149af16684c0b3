// Collective calibration across processes: each collective's latency and
// bandwidth on every level of the job's processes ("node": a node's
// processes over its loopback; "network": one process per node), over the
// Gloo communicator the runtime uses, fitted through several message sizes.
// Every process of the job calls it at once; blocks; call it from one thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "oneflow_lite/api/calibrate_runs.h"
#include "oneflow_lite/core/status.h"
#include "search/collective_time.h"

// Collective calibration across processes: each collective's latency and
// bandwidth on every level of the job's processes (started by python -m
// oneflow_lite.distributed.launch, one device each), over the Gloo
// communicator the runtime uses between processes (TCP). The levels, from
// the innermost: "node", the LOCAL_WORLD_SIZE processes of one node (their
// loopback; every node's group measured at once), when a node holds two or
// more; "network", one process of each node with the same local rank (all
// local ranks at once, so the processes of a node share its link as a
// training job's do), when there are two or more nodes (WORLD_SIZE /
// LOCAL_WORLD_SIZE; an emulated cluster's shaped links).
// Every process of the job calls it at once. Per kind, after a warm-up call
// of each size, `reps` rounds each call every size once, in an order that
// rotates by one per round; every group of a level starts each round
// together (a barrier through the store). Each process times its own calls
// and returns its own points (the median per size, then MonotoneInSize) and
// fits (FitCollectivePoints, calibrate_runs.h): process 0's stand for the
// job. Blocks; call it from one thread.

namespace ofl {

struct LevelCollective {
  std::string level;      // "node" or "network"
  int64_t processes = 0;  // in one group of the level
  CollectiveKind kind = CollectiveKind::kAllReduce;
  std::vector<CollectivePoint> points;  // one per size, ascending
  CollectiveFigure figure;              // the fit through the points
};

// `sizes`: each rank's buffer in bytes, two or more, ascending; each holds at
// least one float32 per process. Errors: not run under a launcher of at least
// 2 processes (named), a LOCAL_WORLD_SIZE that does not divide WORLD_SIZE,
// sizes or reps out of range, a collective that fails (a lost process, a
// timeout).
// The collective's name ("all_reduce", ...), for callers that see only api/.
inline std::string KindName(const LevelCollective& r) { return CollectiveKindName(r.kind); }

Maybe<std::vector<LevelCollective>> CalibrateProcessLevels(const std::vector<int64_t>& sizes,
                                                           int reps);

}  // namespace ofl
