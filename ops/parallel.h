// ParallelFor: runs fn(begin, end) over [0, n) in chunks on oneTBB's pool
// when n is large enough to pay for it, inline otherwise (always inline
// under ThreadSanitizer, which cannot see oneTBB join its workers). The pool's size is
// bounded by whoever owns the process's threads (api/ sets a
// tbb::global_control; the runtime gives each device a task_arena).
#pragma once

#include <cstdint>
#include <functional>

namespace ofl {

constexpr int64_t kParallelGrain = 32768;

void ParallelFor(int64_t n, const std::function<void(int64_t, int64_t)>& fn,
                 int64_t grain = kParallelGrain);

}  // namespace ofl

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
