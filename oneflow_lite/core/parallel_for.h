// ParallelFor: runs fn(begin, end) over [0, n) in chunks on oneTBB's pool
// when n is large enough to pay for it, inline otherwise (always inline
// under ThreadSanitizer, which cannot see oneTBB join its workers). The pool's
// size is bounded by whoever owns the process's threads (ops/parallel.h's
// KernelThreads; the runtime gives each device a task_arena). Thread-safe.
#pragma once

#include <cstdint>
#include <functional>

namespace ofl {

constexpr int64_t kParallelGrain = 32768;

void ParallelFor(int64_t n, const std::function<void(int64_t, int64_t)>& fn,
                 int64_t grain = kParallelGrain);

}  // namespace ofl
