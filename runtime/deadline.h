// Deadline: the end of one bounded wait, and the polling loop that waits
// for it. The communicators bound every call with it (Gloo's waits on its
// pairs; NCCL's polls of its creation and of its stream), so both count the
// time left, pause between polls and word a timeout the same way
// ("timed out after 30000 ms"). A value type; thread-compatible (one thread
// uses one object).
#pragma once

#include <chrono>
#include <functional>
#include <string>

namespace ofl {

class Deadline {
 public:
  using Clock = std::chrono::steady_clock;

  explicit Deadline(std::chrono::milliseconds timeout)
      : timeout_(timeout), end_(Clock::now() + timeout) {}

  std::chrono::milliseconds timeout() const { return timeout_; }
  bool passed() const { return Clock::now() > end_; }
  // At most `slack` is left (a wait that ended then timed out, not failed).
  bool within(std::chrono::milliseconds slack) const { return Clock::now() + slack >= end_; }
  // The time left, at least 1 ms (a wait of 0 would not wait at all).
  std::chrono::milliseconds left() const;
  // "timed out after <timeout> ms".
  std::string TimedOut() const;

 private:
  std::chrono::milliseconds timeout_;
  Clock::time_point end_;
};

// Calls `poll` until it returns true (then returns true) or the deadline
// passes first (false), pausing between calls: a yield for the first 1000,
// then 50 us sleeps (a poll of a device stream or of NCCL is cheap; a long
// wait should not hold a core).
bool PollUntil(const Deadline& deadline, const std::function<bool()>& poll);

}  // namespace ofl
