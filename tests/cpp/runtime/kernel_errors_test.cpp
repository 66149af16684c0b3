// Kernels that reject a user value (KernelContext::Fail) and the anomaly
// check in the actor runtime: it stops every rank, also one
// blocked in a real all-reduce (on_failure aborts the communicators), with
// the failing rank's error; the groups are reset and the next run succeeds.
// On one rank (a single-device graph's plan) a failed run is followed by a
// normal one. Every run has a runtime timeout and ctest's.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <limits>
#include <thread>

#include "ops/kernel.h"
#include "plan_maker.h"
#include "runtime/boxing.h"
#include "runtime/runtime.h"

namespace ofl {
namespace {

using proto::TaskProto;
using std::chrono::milliseconds;

// test_reject copies its input, and rejects element 0 in iteration `at`
// after 100 ms (so that the other rank is waiting in its all-reduce by then).
OFL_REGISTER_KERNEL("test_reject", DeviceType::kCPU, [](KernelContext& k) {
  if (k.iteration == k.attr().Get<int64_t>("at")) {
    std::this_thread::sleep_for(milliseconds(100));
    k.Fail("x[0]=", k.in(0).data<float>()[0], " is out of range [0, 5)");
    return;
  }
  k.out(0).CopyFrom(k.in(0));
});

// Per rank: x -> check (test_reject; rejects on rank 1 in iteration 1) ->
// all-reduce over both ranks -> sink. Rank 0 reaches the all-reduce of
// iteration 1 and waits there for rank 1, which never comes.
proto::Plan RejectThenAllReducePlan() {
  PlanMaker p(2);
  for (int64_t r = 0; r < 2; ++r) {
    int64_t x = p.Register("x", r, {2});
    int64_t y = p.Register("check/y_0", r, {2});
    int64_t sum = p.Register("sum", r, {2});
    p.Source("x", r, 0, x);
    SetAttr(p.Compute("test_reject", "check", r, 0, {x}, {y}), "at", int64_t{r == 1 ? 1 : -1});
    TaskProto* box = p.Task(TaskProto::BOXING, r, 0, "sum", "", {y}, {sum});
    box->mutable_boxing_conf()->set_kind(proto::BoxingConf::ALL_REDUCE);
    box->mutable_boxing_conf()->set_group_id(0);
    box->mutable_boxing_conf()->add_group(0);
    box->mutable_boxing_conf()->add_group(1);
    p.Sink("sum", r, 0, sum);
  }
  return p.plan();
}

TEST(KernelErrorsTest, RejectedValueOnOneRankStopsEveryRankAndTheNextRunWorks) {
  const proto::Plan plan = RejectThenAllReducePlan();
  // The collective's own timeout (20 s) is far above what the test allows.
  std::unique_ptr<BoxingGroups> owned = BoxingGroups::Create(plan, milliseconds(20000)).value();
  BoxingGroups& groups = *owned;
  RuntimeOptions options;
  options.timeout = milliseconds(20000);
  options.boxing = [&](const TaskProto& t, const Tensor& in, Tensor* out, const BoxingStream&) {
    return RunBoxingStep(t, in, out, groups.For(t.boxing_conf().group_id(), t.rank()));
  };
  options.on_failure = [&](const Status& error) { groups.AbortAll(error.message()); };
  auto rt = Runtime::Create(plan, options).value();
  TensorMap feed = {{{"x", 0}, MakeTensor({2}, [](int64_t i) { return i + 7; })},
                    {{"x", 1}, MakeTensor({2}, [](int64_t i) { return i + 7; })}};
  const auto start = std::chrono::steady_clock::now();
  auto failed = rt->Run(3, {feed}, {"sum"});
  ASSERT_FALSE(failed.ok());
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  EXPECT_EQ(failed.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(failed.status().message(),
            "rank 1: task 5 (test_reject 'check'): x[0]=7 is out of range [0, 5)");

  ASSERT_TRUE(groups.ResetAll().ok());  // no rank is inside a collective between runs
  // A failed run does not count: iteration 0 again, which nothing rejects.
  auto again = rt->Run(1, {feed}, {"sum"});
  ASSERT_TRUE(again.ok()) << again.status().message();
  for (int64_t r = 0; r < 2; ++r) {
    const Tensor& sum = again.value().fetched[0].at({"sum", r});
    EXPECT_FLOAT_EQ(sum.data<float>()[0], 14.0f);
    EXPECT_FLOAT_EQ(sum.data<float>()[1], 16.0f);
  }
}

// x -> relu 'r' -> sink, on one rank.
proto::Plan ReluPlan() {
  PlanMaker p(1);
  int64_t x = p.Register("x", 0, {3});
  int64_t y = p.Register("r/y_0", 0, {3});
  p.Source("x", 0, 0, x);
  p.Compute("relu", "r", 0, 0, {x}, {y});
  p.Sink("r", 0, 0, y);
  return p.plan();
}

TEST(KernelErrorsTest, AnomalyCheckNamesTheOpAndTheElementOnlyWhenOn) {
  RuntimeOptions options;
  options.timeout = milliseconds(20000);
  auto rt = Runtime::Create(ReluPlan(), options).value();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  TensorMap feed = {{{"x", 0}, MakeTensor({3}, [&](int64_t i) { return i == 1 ? nan : 1.0f; })}};
  auto off = rt->Run(1, {feed}, {"r"});  // off: NaN flows on (relu keeps it)
  ASSERT_TRUE(off.ok()) << off.status().message();
  EXPECT_TRUE(std::isnan(off.value().fetched[0].at({"r", 0}).data<float>()[1]));
  rt->set_detect_anomaly(true);
  auto on = rt->Run(1, {feed}, {"r"});
  ASSERT_FALSE(on.ok());
  EXPECT_EQ(on.status().message(),
            "rank 0: task 1 (relu 'r'): anomaly: relu 'r' produced a non-finite value: "
            "r/y_0[1]=nan (output 0 of shape (3))");
}

// One rank (a single-device graph's plan): embedding(weight [4, 2], ids [3])
// with an id outside [0, 4) fails naming the task, the op, the index and
// the value; the next run with good ids works (the rejection depends on the
// value, not on the iteration, so it holds however failed runs count).
TEST(KernelErrorsTest, OneRankReturnsTheKernelsStatusAndRunsOn) {
  PlanMaker p(1);
  int64_t weight = p.Register("weight", 0, {4, 2});
  int64_t ids = p.Register("ids", 0, {3});
  p.plan().mutable_registers(ids)->mutable_desc()->set_dtype("int64");
  p.plan().mutable_registers(ids)->set_bytes(3 * 8);
  int64_t out = p.Register("emb/out_0", 0, {3, 2});
  p.Source("weight", 0, 0, weight);
  p.Source("ids", 0, 0, ids);
  p.Compute("embedding", "emb", 0, 0, {weight, ids}, {out});
  p.Sink("emb", 0, 0, out);
  RuntimeOptions options;
  options.timeout = milliseconds(20000);
  auto rt = Runtime::Create(p.plan(), options).value();
  auto feed = [](int64_t second_id) {
    Tensor t(Shape({3}), DataType::kInt64);
    t.data<int64_t>()[0] = 3;
    t.data<int64_t>()[1] = second_id;
    t.data<int64_t>()[2] = 0;
    return TensorMap{{{"weight", 0}, MakeTensor({4, 2}, [](int64_t i) { return i; })},
                     {{"ids", 0}, t}};
  };
  auto failed = rt->Run(1, {feed(9)}, {"emb"});
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(failed.status().message().rfind(
                "rank 0: task 2 (embedding 'emb'): ids[1]=9 is out of range [0, 4)", 0),
            0u)
      << failed.status().message();
  auto next = rt->Run(1, {feed(1)}, {"emb"});
  ASSERT_TRUE(next.ok()) << next.status().message();
  const Tensor& rows = next.value().fetched[0].at({"emb", 0});
  EXPECT_FLOAT_EQ(rows.data<float>()[1], 7.0f);  // row 3
  EXPECT_FLOAT_EQ(rows.data<float>()[3], 3.0f);  // row 1
}

}  // namespace
}  // namespace ofl
