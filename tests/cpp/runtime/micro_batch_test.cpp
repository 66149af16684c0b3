// Act ratios (runtime/actor.h): variables and an in-place update acting once
// per k iterations, a reader acting every iteration, an ACC actor averaging
// k values; counts, values, ordering across the ratio, plan checks, and a
// deadlock reported as a named timeout. Every run has a timeout.
#include <gtest/gtest.h>

#include <chrono>

#include "plan_maker.h"
#include "runtime/runtime.h"

namespace ofl {
namespace {

using std::chrono::milliseconds;

struct MicroBatchPlan {
  proto::Plan plan;
  int64_t add = 0, acc = 0, update = 0, variable = 0;
};

// y = x + w every micro-batch; g = mean of k y's; sgd_update(w, g) once per
// k (lr 1, no momentum): w becomes -mean(x) of the step.
MicroBatchPlan MakePlan(int64_t k, bool ctrl_cycle = false) {
  PlanMaker p(1);
  auto step_rate = [&](int64_t reg) { p.plan().mutable_registers(reg)->set_period(k); };
  const int64_t w = p.Register("w", 0, {3}, 1, true);
  const int64_t mom = p.Register("mom", 0, {3}, 1, true);
  const int64_t x = p.Register("x", 0, {3}, 2);
  const int64_t y = p.Register("y", 0, {3}, 2);
  const int64_t g = p.Register("g", 0, {3}, 1);
  const int64_t ctrl = p.Ctrl("ctrl/add->update", 0);
  for (int64_t r : {w, mom, g, ctrl}) step_rate(r);
  MicroBatchPlan out;
  out.variable = p.Variable("w", 0, 0, w)->id();
  p.Variable("mom", 0, 0, mom)->set_period(k);
  p.plan().mutable_tasks(out.variable)->set_period(k);
  p.Source("x", 0, 0, x);
  proto::TaskProto* add = p.Compute("add", "add", 0, 0, {x, w}, {y});
  add->add_ctrl_outputs(ctrl);
  out.add = add->id();
  proto::TaskProto* acc = p.Task(proto::TaskProto::ACC, 0, 0, "g", "", {y}, {g});
  out.acc = acc->id();
  proto::TaskProto* update = p.Compute("sgd_update", "update", 0, 0, {w, g, mom}, {});
  update->set_period(k);
  update->add_ctrl_inputs(ctrl);
  SetAttr(update, "lr", 1.0);
  out.update = update->id();
  if (ctrl_cycle) {  // the update also gates the accumulator: a cycle, so a deadlock
    const int64_t back = p.Ctrl("ctrl/update->g", 0);
    step_rate(back);
    p.plan().mutable_tasks(out.update)->add_ctrl_outputs(back);
    p.plan().mutable_tasks(out.acc)->add_ctrl_inputs(back);
  }
  p.Sink("y", 0, 0, y);
  out.plan = p.plan();
  return out;
}

class MicroBatchTest : public ::testing::TestWithParam<int64_t> {};

TEST_P(MicroBatchTest, AccumulatesMeanAndUpdatesOncePerStep) {
  const int64_t k = GetParam();
  MicroBatchPlan m = MakePlan(k);
  RuntimeOptions options;
  options.timeout = milliseconds(20000);
  options.record_acts = true;
  auto rt = Runtime::Create(m.plan, options);
  ASSERT_TRUE(rt.ok()) << rt.status().message();
  const Tensor w0 = MakeTensor({3}, [](int64_t i) { return 0.5 * i; });
  ASSERT_TRUE(rt.value()->SetVariable("w", 0, w0).ok());
  const int64_t steps = 3;
  std::vector<TensorMap> feeds;
  for (int64_t i = 0; i < steps * k; ++i) {
    feeds.push_back({{{"x", 0}, MakeTensor({3}, [&](int64_t e) { return i * 3 + e; })}});
  }
  auto result = rt.value()->Run(steps * k, feeds, {"y"});
  ASSERT_TRUE(result.ok()) << result.status().message();
  const RunResult& r = result.value();
  EXPECT_EQ(r.act_counts[m.add], steps * k);
  EXPECT_EQ(r.act_counts[m.acc], steps * k);
  EXPECT_EQ(r.act_counts[m.update], steps);
  EXPECT_EQ(r.act_counts[m.variable], steps);
  // y of iteration i = x_i + w of its step; w after step s = -mean(x of step s).
  Tensor w = w0.Clone();
  for (int64_t s = 0; s < steps; ++s) {
    Tensor mean = MakeTensor({3}, [](int64_t) { return 0.0; });
    for (int64_t j = 0; j < k; ++j) {
      const int64_t i = s * k + j;
      Tensor want = MakeTensor({3}, [&](int64_t e) { return i * 3 + e + w.data<float>()[e]; });
      ExpectClose(r.fetched[i].at({"y", 0}), want);
      for (int64_t e = 0; e < 3; ++e) mean.data<float>()[e] -= (i * 3 + e) / float(k);
    }
    w = mean;
  }
  ExpectClose(rt.value()->GetVariable("w", 0).value(), w);
  // Every add of step s ends before the update of step s starts.
  for (const ActRecord& u : r.acts) {
    if (u.task != m.update) continue;
    for (const ActRecord& a : r.acts) {
      if (a.task == m.add && a.iteration / k == u.iteration / k) {
        EXPECT_LE(a.end_ns, u.start_ns) << "add of iteration " << a.iteration;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(K, MicroBatchTest, ::testing::Values(1, 2, 4));

// x (fed) -> ACC g (period k) -> sink of period k: the fetched g of a step is
// the mean of its k micro-batches, rounded as (sum) * (1/k) in float32. The
// same plan runs on a GPU in tests/cpp/cuda_runtime/cuda_device_ops_test.cpp.
TEST(MicroBatchAccTest, TheAccumulatorLeavesTheMeanOfEachStep) {
  const int64_t k = 4;
  PlanMaker m(1);
  const int64_t x = m.Register("x", 0, {2}, 2);
  const int64_t g = m.Register("g", 0, {2}, 1);
  m.plan().mutable_registers(g)->set_period(k);
  m.Source("x", 0, 0, x);
  m.Task(proto::TaskProto::ACC, 0, 0, "g", "", {x}, {g});
  m.Sink("g", 0, 0, g)->set_period(k);
  RuntimeOptions options;
  options.timeout = milliseconds(20000);
  auto rt = Runtime::Create(m.plan(), options);
  ASSERT_TRUE(rt.ok()) << rt.status().message();
  std::vector<TensorMap> feeds;
  for (int64_t i = 0; i < 2 * k; ++i) {  // micro-batch i: {i, -2i}
    const Tensor t = MakeTensor({2}, [&](int64_t e) { return e == 0 ? 1.0 * i : -2.0 * i; });
    feeds.push_back({{{"x", 0}, t}});
  }
  auto result = rt.value()->Run(2 * k, feeds, {"g"});
  ASSERT_TRUE(result.ok()) << result.status().message();
  // Step 0: (0 + 1 + 2 + 3) * 0.25 = 1.5, -3; step 1: (4 + ... + 7) * 0.25 = 5.5, -11.
  const Tensor& s0 = result.value().fetched[k - 1].at({"g", 0});
  const Tensor& s1 = result.value().fetched[2 * k - 1].at({"g", 0});
  EXPECT_EQ(s0.data<float>()[0], 1.5f);
  EXPECT_EQ(s0.data<float>()[1], -3.0f);
  EXPECT_EQ(s1.data<float>()[0], 5.5f);
  EXPECT_EQ(s1.data<float>()[1], -11.0f);
}

TEST(MicroBatchChecks, RunMustBeWholeSteps) {
  MicroBatchPlan m = MakePlan(2);
  RuntimeOptions options;
  options.timeout = milliseconds(20000);
  auto rt = Runtime::Create(m.plan, options).value();
  TensorMap feed{{{"x", 0}, MakeTensor({3}, [](int64_t) { return 1.0; })}};
  auto result = rt->Run(3, {feed}, {});
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.status().message().find("not a whole number of steps of 2"), std::string::npos)
      << result.status().message();
  EXPECT_TRUE(rt->Run(4, {feed}, {}).ok());  // the runtime is still usable
}

TEST(MicroBatchChecks, StepRateReaderOfMicroRateRegisterIsRefused) {
  MicroBatchPlan m = MakePlan(2);
  m.plan.mutable_registers(3)->clear_period();  // y: micro-rate, read by ACC (fine)
  m.plan.mutable_registers(4)->clear_period();  // g: now micro-rate, read by the update
  auto rt = Runtime::Create(m.plan, {});
  ASSERT_FALSE(rt.ok());
  EXPECT_NE(rt.status().message().find("cannot take several values per act"), std::string::npos)
      << rt.status().message();
}

TEST(MicroBatchChecks, MixedBoxingPeriodsOnOneStreamAreRefused) {
  PlanMaker p(1);
  const int64_t a = p.Register("a", 0, {1}, 1);
  const int64_t b = p.Register("b", 0, {1}, 1);
  p.plan().mutable_registers(b)->set_period(2);
  p.Task(proto::TaskProto::BOXING, 0, 1, "a", "", {}, {a});
  p.Task(proto::TaskProto::BOXING, 0, 1, "b", "", {}, {b})->set_period(2);
  RuntimeOptions options;
  options.boxing = [](const proto::TaskProto&, const Tensor&, Tensor*, const BoxingStream&) {
    return Status::OK();
  };
  auto rt = Runtime::Create(p.plan(), options);
  ASSERT_FALSE(rt.ok());
  EXPECT_NE(rt.status().message().find("give each period its own stream"), std::string::npos)
      << rt.status().message();
}

TEST(MicroBatchChecks, DeadlockAcrossTheRatioIsANamedTimeout) {
  MicroBatchPlan m = MakePlan(2, /*ctrl_cycle=*/true);
  RuntimeOptions options;
  options.timeout = milliseconds(200);
  auto rt = Runtime::Create(m.plan, options);
  ASSERT_TRUE(rt.ok()) << rt.status().message();
  TensorMap feed{{{"x", 0}, MakeTensor({3}, [](int64_t) { return 1.0; })}};
  auto result = rt.value()->Run(2, {feed}, {});
  ASSERT_FALSE(result.ok());
  const std::string message = result.status().message();
  EXPECT_NE(message.find("waited 200 ms for"), std::string::npos) << message;
  EXPECT_EQ(message.rfind("rank 0: task ", 0), 0u) << message;  // names the task it blames
}

}  // namespace
}  // namespace ofl
