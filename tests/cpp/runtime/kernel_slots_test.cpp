// Kernel threads when ranks outnumber them (runtime.h, runtime/kernel_slots.h):
// 4 ranks on num_threads = 2 never run more than 2 kernels at once, and on
// num_threads = 4 they do run more than 2 (the bound is what holds them
// back); KernelSlots alone lets `slots` holders in and no more. Every run
// has a runtime timeout and ctest's.
#include "runtime/kernel_slots.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <thread>

#include "ops/kernel.h"
#include "plan_maker.h"
#include "runtime/runtime.h"

namespace ofl {
namespace {

using std::chrono::milliseconds;

std::atomic<int> running{0};
std::atomic<int> most_running{0};

void NoteRunning(int now) {
  int seen = most_running.load();
  while (now > seen && !most_running.compare_exchange_weak(seen, now)) {
  }
}

// Copies its input to its output, 20 ms long, counting the kernels in flight.
OFL_REGISTER_KERNEL("test_overlap", DeviceType::kCPU, [](KernelContext& k) {
  NoteRunning(++running);
  std::this_thread::sleep_for(milliseconds(20));
  k.out(0).CopyFrom(k.in(0));
  --running;
});

// Per rank: x (source) -> overlap -> sink, all on stream 0.
int MostKernelsAtOnce(int64_t ranks, int num_threads) {
  PlanMaker p(ranks);
  for (int64_t r = 0; r < ranks; ++r) {
    int64_t x = p.Register("x", r, {4}, 2);
    int64_t y = p.Register("overlap/out_0", r, {4}, 2);
    p.Source("x", r, 0, x);
    p.Compute("test_overlap", "overlap", r, 0, {x}, {y});
    p.Sink("y", r, 0, y);
  }
  RuntimeOptions options;
  options.timeout = milliseconds(20000);
  options.num_threads = num_threads;
  auto rt = Runtime::Create(p.plan(), options).value();
  TensorMap feeds;
  for (int64_t r = 0; r < ranks; ++r) {
    feeds[{"x", r}] = MakeTensor({4}, [](int64_t i) { return i; });
  }
  most_running = 0;
  auto result = rt->Run(6, {feeds}, {"y"});
  EXPECT_TRUE(result.ok()) << result.status().message();
  if (result.ok()) {
    EXPECT_FLOAT_EQ(result.value().fetched[5].at({"y", 3}).data<float>()[2], 2.0f);
  }
  return most_running.load();
}

TEST(KernelSlotsTest, FourRanksOnTwoThreadsRunAtMostTwoKernels) {
#if defined(__SANITIZE_THREAD__)
  // runtime.cpp: under ThreadSanitizer every rank gets a thread of its own
  // and no kernel slots (its races are what that build looks for).
  GTEST_SKIP() << "ThreadSanitizer build: no kernel slots";
#endif
  EXPECT_LE(MostKernelsAtOnce(4, 2), 2);
}

TEST(KernelSlotsTest, FourRanksOnFourThreadsRunMoreThanTwo) {
  EXPECT_GT(MostKernelsAtOnce(4, 4), 2);
}

TEST(KernelSlotsTest, HoldersNeverExceedTheSlots) {
  KernelSlots slots(3);
  std::atomic<int> inside{0}, most{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 20; ++i) {
        KernelSlots::Hold hold(&slots);
        const int now = ++inside;
        int seen = most.load();
        while (now > seen && !most.compare_exchange_weak(seen, now)) {
        }
        std::this_thread::sleep_for(std::chrono::microseconds(200));
        --inside;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_LE(most.load(), 3);
  EXPECT_EQ(slots.peak_in_use(), most.load());
  KernelSlots::Hold nothing(nullptr);  // a null KernelSlots holds nothing
}

}  // namespace
}  // namespace ofl
