// ParallelFor: runs fn(begin, end) over [0, n) in chunks on oneTBB's pool
// when n is large enough to pay for it, inline otherwise (always inline
// under ThreadSanitizer, which cannot see oneTBB join its workers). The pool
// is the calling thread's oneTBB arena: the runtime gives each device one of
// its thread count. Thread-safe.
#pragma once

#include <cstdint>
#include <functional>

namespace ofl {

constexpr int64_t kParallelGrain = 32768;

// True under ThreadSanitizer: kernels then run on their caller's thread
// (ParallelFor here, and the OpenMP loops of kernels that have their own),
// since TSan cannot see an uninstrumented pool join its workers.
#if defined(__SANITIZE_THREAD__)
inline constexpr bool kKernelsSerial = true;
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
inline constexpr bool kKernelsSerial = true;
#else
inline constexpr bool kKernelsSerial = false;
#endif
#else
inline constexpr bool kKernelsSerial = false;
#endif

void ParallelFor(int64_t n, const std::function<void(int64_t, int64_t)>& fn,
                 int64_t grain = kParallelGrain);

}  // namespace ofl
