#include "oneflow_lite/core/parallel_for.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

namespace ofl {

// Under ThreadSanitizer (kKernelsSerial) every ParallelFor runs on its
// caller's thread: the distribution's oneTBB is not instrumented, so TSan
// cannot see that tbb::parallel_for joins its workers before returning, and
// reports the caller's later writes (seen: the body's std::function freed
// after a large CopyBox) as races with the workers' reads.
void ParallelFor(int64_t n, const std::function<void(int64_t, int64_t)>& fn, int64_t grain) {
  if (n <= 0) return;
  if (n <= grain || kKernelsSerial) {
    fn(0, n);
    return;
  }
  tbb::parallel_for(tbb::blocked_range<int64_t>(0, n, grain),
                    [&](const tbb::blocked_range<int64_t>& r) { fn(r.begin(), r.end()); });
}

}  // namespace ofl
