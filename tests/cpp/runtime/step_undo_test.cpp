// Transactional steps (runtime/step_undo.h): a run that fails by a kernel
// error, a timeout or the commit hook leaves every variable (Adam's param, m,
// v and step counter) bitwise as before and iteration() where it was, so a
// retried step (with dropout) equals a fresh runtime's; off, a failed run
// may leave some variables updated and says so; SetIteration resumes the
// stream where a checkpoint left it. The oracle for "unchanged"
// is a copy taken with GetVariable before the run; for the retry, a second
// Runtime that never failed. Every run has a timeout.
#include "runtime/step_undo.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <thread>

#include "ops/kernel.h"
#include "plan_maker.h"
#include "runtime/runtime.h"

namespace ofl {
namespace {

using proto::TaskProto;
using std::chrono::milliseconds;

constexpr int64_t kN = 64;
constexpr char kRestored[] =
    " (variables and optimizer state restored to their values before this run)";
constexpr char kOff[] = " (state may be partially updated: transactional steps are off)";

// test_gate copies its input; x[0] < 0 is rejected; x[0] >= 100 sleeps `ms`
// milliseconds first (a slow act that makes another rank time out).
OFL_REGISTER_KERNEL("test_gate", DeviceType::kCPU, [](KernelContext& k) {
  const float x0 = k.in(0).data<float>()[0];
  if (x0 < 0) {
    k.Fail("x[0]=", x0, " is out of range [0, 100]");
    return;
  }
  if (x0 >= 100) std::this_thread::sleep_for(milliseconds(k.attr().Get<int64_t>("ms")));
  k.out(0).CopyFrom(k.in(0));
});

// Per rank r: x -> gate -> dropout -> add(., w) = y -> adam_update(w, y, m,
// v, step); y is fetched. Rank 1's update also waits for rank 0's gate of
// the same iteration (a ctrl register), so a slow gate on rank 0 makes rank
// 1 time out, after rank 1's update of the previous iteration has run.
proto::Plan GatedAdamPlan(int64_t sleep_ms) {
  PlanMaker p(2);
  const int64_t gate_done = p.Ctrl("ctrl/gate0->update1", 0);
  for (int64_t r = 0; r < 2; ++r) {
    const int64_t x = p.Register("x", r, {kN}, 2);
    const int64_t c = p.Register("gate/out_0", r, {kN}, 2);
    const int64_t d = p.Register("drop/y_0", r, {kN}, 2);
    const int64_t mask = p.Register("drop/mask_0", r, {kN}, 2);
    const int64_t y = p.Register("y", r, {kN}, 2);
    const int64_t w = p.Register("w", r, {kN}, 1, true);
    const int64_t m = p.Register("m", r, {kN}, 1, true);
    const int64_t v = p.Register("v", r, {kN}, 1, true);
    const int64_t step = p.Register("step", r, {1}, 1, true);
    p.plan().mutable_registers(step)->mutable_desc()->set_dtype("int64");
    for (auto [name, reg] : {std::pair{"w", w}, {"m", m}, {"v", v}, {"step", step}}) {
      p.Variable(name, r, 0, reg);
    }
    p.Source("x", r, 0, x);
    TaskProto* gate = p.Compute("test_gate", "gate", r, 0, {x}, {c});
    SetAttr(gate, "ms", sleep_ms);
    if (r == 0) gate->add_ctrl_outputs(gate_done);
    SetAttr(p.Compute("dropout", "drop", r, 0, {c}, {d, mask}), "seed", int64_t{7});
    p.Compute("add", "add", r, 0, {d, w}, {y});
    TaskProto* update = p.Compute("adam_update", "update", r, 0, {w, y, m, v, step}, {});
    SetAttr(update, "lr", 0.1);
    if (r == 1) update->add_ctrl_inputs(gate_done);
    p.Sink("y", r, 0, y);
  }
  return p.plan();
}

RuntimeOptions Options(bool transactional = true) {
  RuntimeOptions options;
  options.timeout = milliseconds(20000);
  options.transactional = transactional;
  return options;
}

// Variables as they are now, by (name, rank).
TensorMap Snapshot(const Runtime& rt) {
  TensorMap out;
  for (const TensorKey& key : rt.VariableKeys())
    out[key] = rt.GetVariable(key.name, key.rank).value();
  return out;
}

bool BitwiseEqual(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && a.dtype() == b.dtype() &&
         std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0;
}

void ExpectBitwiseEqual(const TensorMap& got, const TensorMap& want) {
  ASSERT_EQ(got.size(), want.size());
  for (const auto& [key, t] : want) {
    EXPECT_TRUE(BitwiseEqual(got.at(key), t))
        << "variable '" << key.name << "' on rank " << key.rank;
  }
}

// Non-trivial state: w, m, v from a formula (v >= 0), step = 5.
std::unique_ptr<Runtime> MakeRuntime(const proto::Plan& plan, const RuntimeOptions& options) {
  auto rt = Runtime::Create(plan, options).value();
  for (int64_t r = 0; r < 2; ++r) {
    EXPECT_TRUE(
        rt->SetVariable("w", r, MakeTensor({kN}, [&](int64_t i) { return 0.1 * i - r; })).ok());
    EXPECT_TRUE(rt->SetVariable("m", r, MakeTensor({kN}, [](int64_t i) { return 0.01 * i; })).ok());
    EXPECT_TRUE(rt->SetVariable("v", r, MakeTensor({kN}, [](int64_t i) { return 0.02 * i; })).ok());
    Tensor step(Shape({1}), DataType::kInt64);
    step.data<int64_t>()[0] = 5;
    EXPECT_TRUE(rt->SetVariable("step", r, step).ok());
  }
  return rt;
}

// Three iterations' feeds; iteration `bad` gets x[0] = `x0` on rank `rank`.
std::vector<TensorMap> Feeds(int64_t bad = -1, int64_t rank = 0, float x0 = 0) {
  std::vector<TensorMap> feeds(3);
  for (int64_t i = 0; i < 3; ++i) {
    for (int64_t r = 0; r < 2; ++r) {
      Tensor x = MakeTensor({kN}, [&](int64_t e) { return 1 + i + 0.5 * e + r; });
      if (i == bad && r == rank) x.data<float>()[0] = x0;
      feeds[i][{"x", r}] = x;
    }
  }
  return feeds;
}

TEST(StepUndoTest, UndoCopiesOnlyUpdatedVariablesAndPeakBytesCountThem) {
  const proto::Plan plan = GatedAdamPlan(0);
  // w, m, v and step of both ranks are updated in place; nothing else is persistent.
  EXPECT_EQ(StepUndo::UpdatedRegisters(plan).size(), 8u);
  // Without an arena, buffers of their own: w, m, v float32 + an int64 step.
  RuntimeOptions own = Options(true), none = Options(false);
  own.plan_memory = none.plan_memory = false;
  auto on = MakeRuntime(plan, own);
  auto off = MakeRuntime(plan, none);
  const int64_t per_rank = 3 * kN * 4 + 8;
  EXPECT_EQ(on->undo_bytes(), (std::vector<int64_t>{per_rank, per_rank}));
  EXPECT_EQ(off->undo_bytes(), (std::vector<int64_t>{0, 0}));
  for (int64_t r = 0; r < 2; ++r) {
    EXPECT_EQ(on->peak_bytes()[r] - off->peak_bytes()[r], per_rank);
  }
  // With it (runtime/memory_plan.h "Spare slots"): slot 1 of x, gate/out_0,
  // drop/y_0, drop/mask_0 and y (5 x 256 bytes, end to end) holds w, m, v
  // (256 each) and step (64 aligned) over them: they add nothing.
  auto lean = MakeRuntime(plan, Options(true));
  auto lean_off = MakeRuntime(plan, Options(false));
  EXPECT_EQ(lean->undo_bytes(), (std::vector<int64_t>{0, 0}));
  EXPECT_EQ(lean->peak_bytes(), lean_off->peak_bytes());
  // A variable that only is read gets no undo buffer.
  PlanMaker p(1);
  const int64_t w = p.Register("w", 0, {4}, 1, true);
  const int64_t x = p.Register("x", 0, {4});
  const int64_t y = p.Register("y", 0, {4});
  p.Variable("w", 0, 0, w);
  p.Source("x", 0, 0, x);
  p.Compute("add", "add", 0, 0, {x, w}, {y});
  p.Sink("y", 0, 0, y);
  EXPECT_TRUE(StepUndo::UpdatedRegisters(p.plan()).empty());
  EXPECT_EQ(Runtime::Create(p.plan(), Options()).value()->undo_bytes(), std::vector<int64_t>{0});
}

TEST(StepUndoTest, KernelErrorOnOneRankRestoresEveryVariableAndTheRetryMatchesAFreshRun) {
  const proto::Plan plan = GatedAdamPlan(0);
  auto rt = MakeRuntime(plan, Options());
  const TensorMap before = Snapshot(*rt);
  // Iteration 1 is rejected on rank 0: rank 1 has run its update of iteration 0 by then.
  auto failed = rt->Run(3, Feeds(1, 0, -3), {"y"});
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(failed.status().message(),
            std::string("rank 0: task 5 (test_gate 'gate'): x[0]=-3 is out of range [0, 100]") +
                kRestored);
  ExpectBitwiseEqual(Snapshot(*rt), before);
  EXPECT_EQ(rt->iteration(), 0);

  // The retry draws the same dropout masks (iterations 0..2) as a runtime that never failed.
  auto retried = rt->Run(3, Feeds(), {"y"});
  ASSERT_TRUE(retried.ok()) << retried.status().message();
  auto fresh = MakeRuntime(plan, Options());
  auto oracle = fresh->Run(3, Feeds(), {"y"});
  ASSERT_TRUE(oracle.ok()) << oracle.status().message();
  ExpectBitwiseEqual(Snapshot(*rt), Snapshot(*fresh));
  for (int64_t i = 0; i < 3; ++i)
    ExpectBitwiseEqual(retried.value().fetched[i], oracle.value().fetched[i]);
  EXPECT_EQ(rt->iteration(), 3);
  // And the step did something: the oracle's variables moved.
  EXPECT_FALSE(BitwiseEqual(Snapshot(*fresh).at({"w", 1}), before.at({"w", 1})));
}

TEST(StepUndoTest, TimedOutRunRestoresEveryVariable) {
  // Rank 0's gate sleeps 600 ms in iteration 1; rank 1 waits at most 100 ms for it.
  const proto::Plan plan = GatedAdamPlan(600);
  RuntimeOptions options = Options();
  options.timeout = milliseconds(100);
  auto rt = MakeRuntime(plan, options);
  const TensorMap before = Snapshot(*rt);
  auto failed = rt->Run(3, Feeds(1, 0, 100), {"y"});
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().code(), StatusCode::kTimeout) << failed.status().message();
  // Rank 1 waiting for rank 0's gate (or, on a slow machine, any wait) timed out.
  EXPECT_NE(failed.status().message().find(" ms for "), std::string::npos)
      << failed.status().message();
  EXPECT_TRUE(
      failed.status().message().size() > sizeof(kRestored) &&
      failed.status().message().compare(failed.status().message().size() - (sizeof(kRestored) - 1),
                                        std::string::npos, kRestored) == 0)
      << failed.status().message();
  ExpectBitwiseEqual(Snapshot(*rt), before);
  EXPECT_EQ(rt->iteration(), 0);
}

TEST(StepUndoTest, CommitHookErrorRestoresVariablesOfASuccessfulRun) {
  const proto::Plan plan = GatedAdamPlan(0);
  RuntimeOptions options = Options();
  std::vector<Status> seen;
  bool vote_fails = true;
  options.commit = [&](const Status& local) {
    seen.push_back(local);
    return vote_fails ? InvalidArgument("vote: process 3 failed its step") : Status::OK();
  };
  auto rt = MakeRuntime(plan, options);
  const TensorMap before = Snapshot(*rt);
  auto failed = rt->Run(3, Feeds(), {"y"});
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().message(), std::string("vote: process 3 failed its step") + kRestored);
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_TRUE(seen[0].ok());
  ExpectBitwiseEqual(Snapshot(*rt), before);
  EXPECT_EQ(rt->iteration(), 0);

  // A hook that agrees with OK cannot override a local failure.
  vote_fails = false;
  auto local_error = rt->Run(3, Feeds(2, 1, -1), {"y"});
  ASSERT_FALSE(local_error.ok());
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[1].code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(local_error.status().message(), seen[1].message() + kRestored);
  ExpectBitwiseEqual(Snapshot(*rt), before);

  auto committed = rt->Run(3, Feeds(), {"y"});
  ASSERT_TRUE(committed.ok()) << committed.status().message();
  EXPECT_EQ(committed.value().fetched.size(), 3u);
  EXPECT_EQ(rt->iteration(), 3);
}

// A checkpoint's resume: a fresh runtime given the variables and the
// iteration of one that ran 2 iterations draws iteration 2's dropout mask, so
// its third iteration equals the uninterrupted runtime's, bitwise. Without
// SetIteration it draws iteration 0's mask and differs.
TEST(StepUndoTest, SetIterationResumesTheRandomStream) {
  const proto::Plan plan = GatedAdamPlan(0);
  const std::vector<TensorMap> feeds = Feeds();
  auto whole = MakeRuntime(plan, Options());
  ASSERT_TRUE(whole->Run(2, {feeds[0], feeds[1]}, {"y"}).ok());
  const TensorMap saved = Snapshot(*whole);
  auto want = whole->Run(1, {feeds[2]}, {"y"});
  ASSERT_TRUE(want.ok()) << want.status().message();
  for (bool resume : {true, false}) {
    auto resumed = Runtime::Create(plan, Options()).value();
    for (const auto& [key, t] : saved)
      ASSERT_TRUE(resumed->SetVariable(key.name, key.rank, t).ok());
    if (resume) {
      ASSERT_TRUE(resumed->SetIteration(2).ok());
    }
    auto got = resumed->Run(1, {feeds[2]}, {"y"});
    ASSERT_TRUE(got.ok()) << got.status().message();
    const bool same =
        BitwiseEqual(got.value().fetched[0].at({"y", 0}), want.value().fetched[0].at({"y", 0}));
    EXPECT_EQ(same, resume);
    if (resume) ExpectBitwiseEqual(Snapshot(*resumed), Snapshot(*whole));
    EXPECT_EQ(resumed->iteration(), resume ? 3 : 1);
  }
  const Status negative = whole->SetIteration(-1);
  EXPECT_EQ(negative.message(), "set_iteration: iteration -1 must be >= 0");
  EXPECT_EQ(whole->iteration(), 3);
}

TEST(StepUndoTest, WithoutTransactionsAFailedRunMayLeaveAPartialUpdateAndSaysSo) {
  const proto::Plan plan = GatedAdamPlan(0);
  auto rt = MakeRuntime(plan, Options(false));
  const TensorMap before = Snapshot(*rt);
  auto failed = rt->Run(3, Feeds(1, 0, -3), {"y"});
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(
      failed.status().message(),
      std::string("rank 0: task 5 (test_gate 'gate'): x[0]=-3 is out of range [0, 100]") + kOff);
  // Rank 1's update of iteration 0 ran before rank 0's gate of iteration 1 could act.
  const TensorMap after = Snapshot(*rt);
  EXPECT_FALSE(BitwiseEqual(after.at({"w", 1}), before.at({"w", 1})));
  EXPECT_EQ(after.at({"step", 1}).data<int64_t>()[0], 6);
  EXPECT_EQ(rt->iteration(), 3);  // as before transactional steps: it advances
}

}  // namespace
}  // namespace ofl
