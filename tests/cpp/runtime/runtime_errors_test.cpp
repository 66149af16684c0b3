// How the actor runtime fails: a rank whose input never comes ends with the
// named timeout error; a kernel that throws and a boxing step that fails stop
// every thread and return their status; bad feeds, fetches and plans are
// rejected with messages that name the culprit; a Runtime runs again after a
// failed run. Every run has a runtime timeout and ctest's.
#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "ops/kernel.h"
#include "plan_maker.h"
#include "runtime/runtime.h"

namespace ofl {
namespace {

using proto::TaskProto;
using std::chrono::milliseconds;

// Test kernels (no OpDef: the runtime then takes the op_conf's attrs as they
// are). test_stall copies its input to its output, after sleeping `ms`
// milliseconds when x[0] < 0; test_throw throws in iteration `at`.
OFL_REGISTER_KERNEL("test_stall", DeviceType::kCPU, [](KernelContext& k) {
  if (k.in(0).data<float>()[0] < 0) {
    std::this_thread::sleep_for(milliseconds(k.attr().Get<int64_t>("ms")));
  }
  k.out(0).CopyFrom(k.in(0));
});
OFL_REGISTER_KERNEL("test_throw", DeviceType::kCPU, [](KernelContext& k) {
  if (k.iteration == k.attr().Get<int64_t>("at")) throw std::runtime_error("boom");
  k.out(0).CopyFrom(k.in(0));
});

// rank 0: x -> slow (test_stall) ; rank 1: r = relu(slow's output) -> sink.
proto::Plan SlowProducerPlan(int64_t sleep_ms) {
  PlanMaker p(2);
  int64_t x = p.Register("x", 0, {2});
  int64_t slow = p.Register("slow/out_0", 0, {2});
  int64_t r = p.Register("r/y_0", 1, {2});
  p.Source("x", 0, 0, x);
  SetAttr(p.Compute("test_stall", "slow", 0, 0, {x}, {slow}), "ms", sleep_ms);
  p.Compute("relu", "r", 1, 0, {slow}, {r});
  p.Sink("r", 1, 0, r);
  return p.plan();
}

TEST(RuntimeErrorsTest, RankWaitingForInputTimesOutWithNamedError) {
  RuntimeOptions options;
  options.timeout = milliseconds(200);
  auto rt = Runtime::Create(SlowProducerPlan(1000), options).value();
  TensorMap feed = {{{"x", 0}, MakeTensor({2}, [](int64_t i) { return i - 1.0; })}};
  auto result = rt->Run(2, {feed}, {"r"});
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), StatusCode::kTimeout);
  EXPECT_EQ(result.status().message(),
            "rank 1: task 2 (relu 'r') waited 200 ms for input register 'slow/out_0'");
  // x[0] >= 0 does not stall: the same Runtime runs again from a clean state.
  feed = {{{"x", 0}, MakeTensor({2}, [](int64_t i) { return i + 1.0; })}};
  auto again = rt->Run(3, {feed}, {"r"});
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_FLOAT_EQ(again.value().fetched[2].at({"r", 1}).data<float>()[0], 1.0f);
  EXPECT_FLOAT_EQ(again.value().fetched[2].at({"r", 1}).data<float>()[1], 2.0f);
  EXPECT_EQ(rt->Run(1, {feed}, {"nope"}).status().message(),
            "run: cannot fetch unknown tensor 'nope'");
}

proto::Plan ThrowPlan(int64_t slots) {
  PlanMaker p(1);
  int64_t x = p.Register("x", 0, {2}, slots);
  int64_t a = p.Register("a", 0, {2}, slots);
  int64_t b = p.Register("b", 0, {2}, slots);
  p.Source("x", 0, 0, x);
  SetAttr(p.Compute("test_throw", "thrower", 0, 1, {x}, {a}), "at", int64_t{2});
  p.Compute("relu", "after", 0, 0, {a}, {b});
  p.Sink("b", 0, 0, b);
  return p.plan();
}

TEST(RuntimeErrorsTest, ThrowingKernelStopsTheRunAndTheRuntimeRunsAgain) {
  RuntimeOptions options;
  options.timeout = milliseconds(20000);
  auto rt = Runtime::Create(ThrowPlan(2), options).value();
  TensorMap feed = {{{"x", 0}, MakeTensor({2}, [](int64_t i) { return i + 1.0; })}};
  auto result = rt->Run(5, {feed}, {"b"});
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().message(),
            "rank 0: task 1 (test_throw 'thrower'): kernel failed: boom");
  EXPECT_EQ(rt->iteration(), 0);  // a failed run does not count (runtime.h)
  // Iterations 0 and 1 do not throw: the dirty state of the failed run is gone.
  auto again = rt->Run(2, {feed}, {"b"});
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_FLOAT_EQ(again.value().fetched[1].at({"b", 0}).data<float>()[1], 2.0f);
  EXPECT_EQ(rt->iteration(), 2);
}

// Rank 1's boxing step fails; rank 0's is blocked in its "collective" until
// on_failure aborts it (as a communicator abort would), long before the
// collective's own 20 s timeout.
TEST(RuntimeErrorsTest, FailingBoxingStepStopsEveryRank) {
  PlanMaker p(2);
  for (int64_t r = 0; r < 2; ++r) {
    int64_t x = p.Register("x", r, {2});
    int64_t y = p.Register("y", r, {2});
    p.Source("x", r, 0, x);
    TaskProto* box = p.Task(TaskProto::BOXING, r, 0, "y", "", {x}, {y});
    box->mutable_boxing_conf()->set_kind(proto::BoxingConf::ALL_REDUCE);
    p.Sink("y", r, 0, y);
  }
  std::mutex mu;
  std::condition_variable cv;
  int failures = 0;
  RuntimeOptions options;
  options.timeout = milliseconds(20000);
  options.boxing = [&](const TaskProto& task, const Tensor& /*in*/, Tensor* /*out*/,
                       const BoxingStream&) -> Status {
    if (task.rank() == 1) return Status(StatusCode::kInternal, "peer went away");
    std::unique_lock<std::mutex> lock(mu);
    if (!cv.wait_for(lock, milliseconds(20000), [&] { return failures > 0; })) {
      return Status(StatusCode::kTimeout, "collective timed out");
    }
    return Status(StatusCode::kInternal, "aborted");
  };
  options.on_failure = [&](const Status& error) {
    EXPECT_EQ(error.message(), "rank 1: task 4 (boxing all_reduce 'y'): peer went away");
    std::lock_guard<std::mutex> lock(mu);
    ++failures;
    cv.notify_all();
  };
  auto rt = Runtime::Create(p.plan(), options).value();
  TensorMap feed = {{{"x", 0}, MakeTensor({2}, [](int64_t i) { return i; })},
                    {{"x", 1}, MakeTensor({2}, [](int64_t i) { return i; })}};
  const auto start = std::chrono::steady_clock::now();
  auto result = rt->Run(4, {feed}, {"y"});
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().message(), "rank 1: task 4 (boxing all_reduce 'y'): peer went away");
  EXPECT_EQ(result.status().code(), StatusCode::kInternal);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  EXPECT_EQ(failures, 1);
}

TEST(RuntimeErrorsTest, RejectsBadFeedsFetchesAndPlans) {
  auto rt = Runtime::Create(ThrowPlan(1)).value();
  TensorMap good = {{{"x", 0}, MakeTensor({2}, [](int64_t i) { return i; })}};
  EXPECT_EQ(rt->Run(2, {}, {}).status().message(),
            "run: 0 feed maps for 2 iterations (give one per iteration, or one for all)");
  EXPECT_EQ(rt->Run(2, {good, {}}, {}).status().message(),
            "run: input 'x' on rank 0 was not fed for iteration 1");
  EXPECT_EQ(rt->Run(1, {{{{"x", 0}, Tensor({3}, DataType::kFloat32)}}}, {}).status().message(),
            "run: input 'x' on rank 0 expects shape (2) float32, got (3) float32");
  EXPECT_EQ(rt->Run(1, {{{{"x", 1}, good.begin()->second}}}, {}).status().message(),
            "run: 'x' on rank 1 is not an input of the plan");

  proto::Plan no_kernel = ThrowPlan(1);
  no_kernel.mutable_tasks(2)->mutable_op_conf()->set_op_type("no_kernel_op");
  EXPECT_EQ(Runtime::Create(no_kernel).status().message(), "op 'no_kernel_op' has no cpu kernel");

  proto::Plan orphan = ThrowPlan(1);
  orphan.mutable_tasks()->DeleteSubrange(0, 1);
  for (int i = 0; i < orphan.tasks_size(); ++i) orphan.mutable_tasks(i)->set_id(i);
  EXPECT_EQ(Runtime::Create(orphan).status().message(),
            "plan: task 0 (test_throw 'thrower') reads register 'x' that no task writes");

  proto::Plan arity = ThrowPlan(1);
  arity.mutable_tasks(2)->add_inputs(0);  // relu with two inputs
  EXPECT_EQ(Runtime::Create(arity).status().message(),
            "rank 0: task 2 (relu 'after'): has 2 data inputs and 1 data outputs, the op takes "
            "1 and 1");

  proto::Plan boxing = ThrowPlan(1);
  boxing.mutable_tasks(2)->set_kind(TaskProto::BOXING);
  EXPECT_EQ(Runtime::Create(boxing).status().message(),
            "rank 0: task 2 (boxing identity 'after'): the runtime has no boxing function");

  proto::Plan slots = ThrowPlan(1);
  slots.mutable_registers(0)->set_persistent(true);
  slots.mutable_registers(0)->set_num_slots(2);
  EXPECT_EQ(Runtime::Create(slots).status().message(),
            "plan: persistent register 'x' has 2 slots, not 1");
}

}  // namespace
}  // namespace ofl
