// The bounded wait both Gloo and NCCL use (runtime/deadline.h): a poll that
// succeeds ends the wait at once, one that never does ends it at the deadline
// and not before, and the time left never reads as zero.
#include "runtime/deadline.h"

#include <gtest/gtest.h>

namespace ofl {
namespace {

using std::chrono::milliseconds;

TEST(DeadlineTest, APollThatSucceedsEndsTheWait) {
  int calls = 0;
  EXPECT_TRUE(PollUntil(Deadline(milliseconds(10000)), [&] { return ++calls == 3; }));
  EXPECT_EQ(calls, 3);
}

TEST(DeadlineTest, APollThatNeverSucceedsEndsAtTheDeadline) {
  const auto start = Deadline::Clock::now();
  const Deadline deadline(milliseconds(50));
  EXPECT_FALSE(PollUntil(deadline, [] { return false; }));
  EXPECT_GE(Deadline::Clock::now() - start, milliseconds(50));
  EXPECT_TRUE(deadline.passed());
  EXPECT_EQ(deadline.left(), milliseconds(1));  // never 0: a wait of 0 would not wait
  EXPECT_TRUE(deadline.within(milliseconds(0)));
  EXPECT_EQ(deadline.TimedOut(), "timed out after 50 ms");
}

TEST(DeadlineTest, TimeLeftCountsDown) {
  const Deadline deadline(milliseconds(60000));
  EXPECT_FALSE(deadline.passed());
  EXPECT_FALSE(deadline.within(milliseconds(1000)));
  EXPECT_GT(deadline.left(), milliseconds(59000));
  EXPECT_LE(deadline.left(), milliseconds(60000));
}

}  // namespace
}  // namespace ofl
