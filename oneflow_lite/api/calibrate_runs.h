// What the calibrations share (calibrate.cpp in one process,
// calibrate_processes.cpp across processes, calibrate_kernels.cpp per op):
// the median of repeated timings, and one call of a collective on float32
// buffers. Pure functions; RunCollective is as thread-safe as the
// communicator it calls.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "oneflow_lite/core/communicator.h"
#include "oneflow_lite/core/status.h"
#include "search/collective_time.h"

namespace ofl {

// The median of `v` (the mean of the middle two for an even count); v must
// not be empty.
double Median(std::vector<double> v);

// One call of `kind` on `comm` with `count` float32 elements as each rank's
// whole buffer (all-reduce's buffer, reduce-scatter's input, all-gather's
// output, all-to-all's input and output), split in comm->size() equal parts;
// `in` and `out` hold count elements. SEND_RECV has no such call (CHECK).
Status RunCollective(Communicator* comm, CollectiveKind kind, int64_t count,
                     std::vector<float>* in, std::vector<float>* out, const std::string& tag);

}  // namespace ofl
