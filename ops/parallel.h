// The kernels' threads: ParallelFor (core's, oneflow_lite/core/parallel_for.h:
// chunks on oneTBB's pool) and KernelThreads, which bounds every kernel thread
// pool of the process. The pool's size is bounded by whoever owns the
// process's threads (api/ sets it; the runtime gives each device a task_arena).
#pragma once

#include "oneflow_lite/core/parallel_for.h"

namespace ofl {

// Bounds every kernel thread pool of the process (oneTBB, OpenBLAS, oneDNN's
// OpenMP) to `num_threads` (0 = every core) while it lives. One at a time:
// the owner (api::Session) creates it; the last one created wins.
class KernelThreads {
 public:
  explicit KernelThreads(int num_threads);
  ~KernelThreads();
  int num_threads() const { return num_threads_; }

 private:
  int num_threads_;
  struct Control;
  Control* control_;
};

}  // namespace ofl
