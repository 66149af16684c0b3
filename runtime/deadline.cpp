#include "runtime/deadline.h"

#include <algorithm>
#include <thread>

namespace ofl {

std::chrono::milliseconds Deadline::left() const {
  return std::max(std::chrono::milliseconds(1),
                  std::chrono::ceil<std::chrono::milliseconds>(end_ - Clock::now()));
}

std::string Deadline::TimedOut() const {
  return "timed out after " + std::to_string(timeout_.count()) + " ms";
}

bool PollUntil(const Deadline& deadline, const std::function<bool()>& poll) {
  for (int64_t polls = 0;; ++polls) {
    if (poll()) return true;
    if (deadline.passed()) return false;
    if (polls < 1000) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }
}

}  // namespace ofl
