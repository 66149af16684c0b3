// RunContext: what the actor threads of one Runtime::Run share: the number
// of iterations, the wait timeout, whether acts are recorded, the first error
// and the stop flag. The caller owns it for the length of the run. Fail() and
// the finish counter are thread-safe; the plain fields are written before the
// threads start and only read while they run.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <vector>

#include "oneflow_lite/core/status.h"

namespace ofl {

class ActorThread;

// One act, for traces and tests. Times in nanoseconds since the run began.
struct ActRecord {
  int64_t task = 0;
  int64_t rank = 0;
  int64_t stream = 0;
  int64_t iteration = 0;
  int64_t start_ns = 0;
  int64_t end_ns = 0;
};

struct RunContext {
  int64_t num_iterations = 0;
  int64_t first_iteration = 0;
  std::chrono::milliseconds timeout{0};
  bool record_acts = false;
  bool detect_anomaly = false;  // COMPUTE acts fail on a NaN or Inf output
  std::chrono::steady_clock::time_point start;
  // The threads to wake on failure, and the caller's hook (may be empty).
  std::vector<ActorThread*> threads;
  const std::function<void(const Status&)>* on_failure = nullptr;
  std::atomic<bool> stopped{false};

  int64_t NowNs() const {
    const auto elapsed = std::chrono::steady_clock::now() - start;
    return std::chrono::duration_cast<std::chrono::nanoseconds>(elapsed).count();
  }
  // Records the first error, stops and wakes every thread.
  void Fail(Status status);
  Status error() const {
    std::lock_guard<std::mutex> lock(mu_);
    return error_;
  }
  // The threads report when their loop ends; the caller waits for all.
  void SetRunning(int64_t n) { running_ = n; }
  void ThreadFinished();
  void WaitAllFinished();

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  Status error_;
  int64_t running_ = 0;
};

}  // namespace ofl
