// The kernels' threads: ParallelFor (core's, oneflow_lite/core/parallel_for.h:
// chunks on oneTBB's pool) and KernelThreads, a session's thread count for
// the pools that have no arena: OpenBLAS's (process-wide) and OpenMP's on
// the creating thread. oneTBB is bounded per device by the runtime's
// task_arena, and every actor thread sets its own OpenMP count
// (runtime/actor_thread.h), so no process-wide oneTBB limit is set: one
// (tbb::global_control) would hold every session to the smallest count of
// any live one.
#pragma once

#include "oneflow_lite/core/parallel_for.h"

namespace ofl {

// Sets OpenBLAS's thread count and the calling thread's OpenMP count to
// `num_threads` (0 = every core). The owner (api::Session) creates it; the
// last one created wins for OpenBLAS.
class KernelThreads {
 public:
  explicit KernelThreads(int num_threads);
  int num_threads() const { return num_threads_; }

 private:
  int num_threads_;
};

}  // namespace ofl
