// Collective calibration across processes: the latency and bandwidth of each
// collective between the processes of this job (started by python -m
// oneflow_lite.distributed.launch, one device each), over the Gloo
// communicator the runtime uses between processes (TCP; loopback on one
// machine). Every process of the job calls it at once; each measures its own
// calls (a tiny one of one float per process, and one of `bytes` per
// process: medians of `reps` after a warm-up), fits them with
// FitCollectiveFigure (calibrate.h), and returns process 0's figures on every
// process (gathered through the job's store), so that all agree.
// Blocks; call it from one thread.
#pragma once

#include <cstdint>
#include <vector>

#include "oneflow_lite/core/proto/cluster.pb.h"
#include "oneflow_lite/core/status.h"

namespace ofl {

// Errors: not run under a launcher of at least 2 processes (named), bytes or
// reps out of range, a collective that fails (a lost process, a timeout).
Maybe<std::vector<proto::CollectiveFigure>> CalibrateProcessCollectives(int64_t bytes, int reps);

}  // namespace ofl
