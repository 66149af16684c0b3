// What the calibrations share (calibrate.cpp in one process,
// calibrate_processes.cpp across processes, calibrate_kernels.cpp per op):
// the median of repeated timings, one call of a collective on float32
// buffers, the latency-bandwidth fit of a collective timed at several
// sizes, and the monotone fit of its table. Pure functions; RunCollective is as thread-safe as the
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
Status RunCollective(Communicator* comm, CollectiveKind kind, int64_t count, std::vector<float>* in,
                     std::vector<float>* out, const std::string& tag);

// One size of a collective: the bytes one rank sent per call (the
// communicator's own count) and the median seconds of a call.
struct CollectivePoint {
  int64_t buffer_bytes = 0;  // each rank's whole buffer (RunCollective's count * 4)
  double bytes_sent = 0;
  double seconds = 0;
};

// The line seconds = steps * latency + bytes_sent / bandwidth through
// `points` (two or more sizes, any order): the bandwidth from a least-squares
// line through the larger half of the sizes (where the bytes dominate; a
// shaper's burst allowance or a cache speeds only the small ones), the
// latency from the two smallest sizes (the smallest alone when the smaller
// half holds one): the least of their seconds less their bytes' time (a
// busy machine only adds time), over steps (CollectiveSteps(kind, group)),
// at least 0. A slope
// that is not positive (times flat in the size) takes the bandwidth of the
// largest point alone.
CollectiveFigure FitCollectivePoints(CollectiveKind kind, int64_t group,
                                     std::vector<CollectivePoint> points);

// `points` sorted by bytes_sent with seconds made non-decreasing in the
// size: each size's seconds at most the least of every larger size's, e.g.
// 1, 3, 2, 4 become 1, 2, 2, 4. Sending more never takes less time, and a
// busy machine only adds time (a descheduled peer, a scheduler tick), so a
// larger size's measurement bounds a smaller one's from above; the largest
// size keeps its own, and a table that interpolates between sizes never
// prices a disturbed size above a larger one.
std::vector<CollectivePoint> MonotoneInSize(std::vector<CollectivePoint> points);

}  // namespace ofl
