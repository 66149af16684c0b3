// Memory planning of registers (runtime/memory_plan.h): offsets and arena
// bytes worked out by hand for a plan where sharing is legal, plans where it
// is not (a pipelined chain, a multi-slot register, micro-batches), and the
// runtime's peak bytes and fetched values with planning on and off, over
// several iterations on two threads, against a plain loop.
#include "runtime/memory_plan.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "plan_maker.h"
#include "runtime/plan_check.h"
#include "runtime/runtime.h"

namespace ofl {
namespace {

using std::chrono::milliseconds;

constexpr int64_t kFloats = 256;         // every tensor: 256 float32
constexpr int64_t kBytes = kFloats * 4;  // = 1024 bytes, a multiple of 64
constexpr float kScale = -0.5f;

struct StepPlan {
  proto::Plan plan;
  int64_t x, w, a, b, c, d;  // register ids
};

// x fed, w a variable (read by the first and the last task, so the next
// iteration's first task waits for this iteration's last):
//   a = x + w;  b = kScale * a;  c = relu(b);  d = c + w   (d read by nobody)
// Tasks alternate between streams 0 and 1 (two actor threads) when `two_streams`.
// Shares, by memory_plan.h's rule: a~c (t2 reads a before t3 writes c; t4
// reads c before w is freed for the next t1), a~d and b~d; x shares with
// nothing (the next iteration's source waits only for t1). a~b, b~c, c~d
// meet in one task.
StepPlan MakeStepPlan(bool two_streams, int64_t a_slots = 1) {
  PlanMaker p(1);
  StepPlan s;
  s.x = p.Register("x", 0, {kFloats});
  s.w = p.Register("w", 0, {kFloats}, 1, true);
  s.a = p.Register("a", 0, {kFloats}, a_slots);
  s.b = p.Register("b", 0, {kFloats});
  s.c = p.Register("c", 0, {kFloats});
  s.d = p.Register("d", 0, {kFloats});
  auto stream = [&](int64_t k) { return two_streams ? k % 2 : 0; };
  p.Source("x", 0, 0, s.x);
  p.Variable("w", 0, 0, s.w);
  p.Compute("add_n", "t1", 0, stream(0), {s.x, s.w}, {s.a});
  SetAttr(p.Compute("scalar_mul", "t2", 0, stream(1), {s.a}, {s.b}), "value", double{kScale});
  p.Compute("relu", "t3", 0, stream(2), {s.b}, {s.c});
  p.Compute("add_n", "t4", 0, stream(3), {s.c, s.w}, {s.d});
  s.plan = p.plan();
  return s;
}

// `producers_of`: the plan whose producers CheckPlan reports (the same tasks).
MemoryPlan PlanOf(const proto::Plan& plan, const proto::Plan* producers_of = nullptr) {
  return PlanRegisterMemory(plan, 0, CheckPlan(producers_of ? *producers_of : plan).value());
}

TEST(MemoryPlanTest, OrderedRegistersShareAtOffsetsWorkedOutByHand) {
  const StepPlan s = MakeStepPlan(false);
  const MemoryPlan m = PlanOf(s.plan);
  // Equal sizes, so by id: x at 0; a meets x: 1024; b meets x and a: 2048;
  // c shares with a, meets x and b: 1024; d shares with a and b, meets x
  // and c: 2048.
  EXPECT_EQ(m.offset[s.x], 0);
  EXPECT_EQ(m.offset[s.a], kBytes);
  EXPECT_EQ(m.offset[s.b], 2 * kBytes);
  EXPECT_EQ(m.offset[s.c], kBytes);
  EXPECT_EQ(m.offset[s.d], 2 * kBytes);
  EXPECT_EQ(m.offset[s.w], -1);  // a variable is never planned
  EXPECT_EQ(m.arena_bytes, 3 * kBytes);
  EXPECT_EQ(m.unshared_bytes, 5 * kBytes);
}

TEST(MemoryPlanTest, PipelinedChainSharesNothing) {
  // Without the variable that closes the loop, t1 of iteration i+1 may run
  // while t3 and t4 of iteration i still do: no register is ordered before
  // another across iterations, so nothing shares and no arena is made.
  PlanMaker p(1);
  int64_t x = p.Register("x", 0, {kFloats});
  int64_t a = p.Register("a", 0, {kFloats});
  int64_t b = p.Register("b", 0, {kFloats});
  int64_t c = p.Register("c", 0, {kFloats});
  p.Source("x", 0, 0, x);
  p.Compute("relu", "t1", 0, 0, {x}, {a});
  p.Compute("relu", "t2", 0, 0, {a}, {b});
  p.Compute("relu", "t3", 0, 0, {b}, {c});
  p.Sink("out", 0, 0, c);
  const MemoryPlan m = PlanOf(p.plan());
  EXPECT_EQ(m.arena_bytes, 0);
  for (int64_t id : {x, a, b, c}) EXPECT_EQ(m.offset[id], -1);
}

TEST(MemoryPlanTest, MultiSlotRegisterKeepsItsOwnBuffers) {
  // a with 2 slots (its producer may run an iteration ahead): not planned;
  // b~d still share, c and x sit apart.
  const StepPlan s = MakeStepPlan(false, /*a_slots=*/2);
  const MemoryPlan m = PlanOf(s.plan);
  EXPECT_EQ(m.offset[s.a], -1);
  EXPECT_EQ(m.offset[s.b], m.offset[s.d]);
  EXPECT_NE(m.offset[s.c], m.offset[s.b]);
  EXPECT_EQ(m.arena_bytes, 3 * kBytes);  // {b, d}, c, x
}

TEST(MemoryPlanTest, MicroBatchesGetNoArena) {
  const StepPlan original = MakeStepPlan(false);
  StepPlan s = original;
  s.plan.mutable_tasks(5)->set_period(2);  // t4 acts once per 2 iterations
  s.plan.mutable_registers(s.d)->set_period(2);
  const MemoryPlan m = PlanOf(s.plan, &original.plan);
  EXPECT_EQ(m.arena_bytes, 0);
  EXPECT_TRUE(std::all_of(m.offset.begin(), m.offset.end(), [](int64_t o) { return o == -1; }));
}

// d of each iteration by a plain loop: w + relu(kScale * (x + w)).
std::vector<float> ExpectedD(const std::vector<float>& x, const std::vector<float>& w) {
  std::vector<float> d(x.size());
  for (size_t i = 0; i < x.size(); ++i) d[i] = w[i] + std::max(0.0f, kScale * (x[i] + w[i]));
  return d;
}

TEST(MemoryPlanTest, RuntimePeakDropsByTheSharedBytesAndValuesStay) {
  constexpr int64_t kIterations = 6;
  for (bool two_streams : {false, true}) {
    SCOPED_TRACE(two_streams ? "two streams" : "one stream");
    const StepPlan s = MakeStepPlan(two_streams);
    std::vector<Maybe<RunResult>> results;
    std::vector<int64_t> peaks;
    for (bool on : {true, false}) {
      RuntimeOptions options;
      options.timeout = milliseconds(20000);
      options.plan_memory = on;
      auto rt = Runtime::Create(s.plan, options).value();
      ASSERT_TRUE(rt->SetVariable("w", 0,
                                  MakeTensor({kFloats},
                                             [](int64_t i) {
                                               return 0.25 * static_cast<double>(i % 7) - 0.5;
                                             }))
                      .ok());
      std::vector<TensorMap> feeds;
      for (int64_t it = 0; it < kIterations; ++it) {
        feeds.push_back({{{"x", 0}, MakeTensor({kFloats}, [it](int64_t i) {
                            return static_cast<double>((i * 3 + it * 5) % 11) - 5.0;
                          })}});
      }
      results.push_back(rt->Run(kIterations, feeds, {"d"}));
      ASSERT_TRUE(results.back().ok()) << results.back().status().message();
      peaks.push_back(rt->peak_bytes()[0]);
    }
    // Planned: arena 3 x 1024 + w 1024; own buffers: x, w, a, b, c, d.
    EXPECT_EQ(peaks[0], 4 * kBytes);
    EXPECT_EQ(peaks[1], 6 * kBytes);
    std::vector<float> w(kFloats);
    for (int64_t i = 0; i < kFloats; ++i) w[i] = 0.25f * static_cast<float>(i % 7) - 0.5f;
    for (int64_t it = 0; it < kIterations; ++it) {
      std::vector<float> x(kFloats);
      for (int64_t i = 0; i < kFloats; ++i) x[i] = static_cast<float>((i * 3 + it * 5) % 11) - 5.f;
      const std::vector<float> want = ExpectedD(x, w);
      for (const auto& r : results) {
        const Tensor& got = r.value().fetched[it].at({"d", 0});
        for (int64_t i = 0; i < kFloats; ++i) {
          ASSERT_EQ(got.data<float>()[i], want[i]) << "iteration " << it << " element " << i;
        }
      }
    }
  }
}

// x fed, w a variable; a = x + w; b = reshape(a) to 16 x 16; c = relu(b);
// d = reshape(c) back; e = d + w. With `sink_reads_b`, a SINK also reads b:
// it waits for nothing of the next iteration, so b cannot be a's bytes.
struct ViewPlan {
  proto::Plan plan;
  int64_t x, w, a, b, c, d, e;
};

ViewPlan MakeViewPlan(bool sink_reads_b) {
  PlanMaker p(1);
  ViewPlan v;
  v.x = p.Register("x", 0, {kFloats});
  v.w = p.Register("w", 0, {kFloats}, 1, true);
  v.a = p.Register("a", 0, {kFloats});
  v.b = p.Register("b", 0, {16, 16});
  v.c = p.Register("c", 0, {16, 16});
  v.d = p.Register("d", 0, {kFloats});
  v.e = p.Register("e", 0, {kFloats});
  p.Source("x", 0, 0, v.x);
  p.Variable("w", 0, 0, v.w);
  p.Compute("add_n", "t1", 0, 0, {v.x, v.w}, {v.a});
  SetAttr(p.Compute("reshape", "t2", 0, 0, {v.a}, {v.b}), "shape", std::vector<int64_t>{16, 16});
  p.Compute("relu", "t3", 0, 0, {v.b}, {v.c});
  SetAttr(p.Compute("reshape", "t4", 0, 0, {v.c}, {v.d}), "shape", std::vector<int64_t>{kFloats});
  p.Compute("add_n", "t5", 0, 0, {v.d, v.w}, {v.e});
  if (sink_reads_b) p.Sink("b_out", 0, 0, v.b);
  v.plan = p.plan();
  return v;
}

TEST(MemoryPlanTest, ReshapeOutputsAreViewsOfTheirInputs) {
  const ViewPlan v = MakeViewPlan(false);
  const MemoryPlan m = PlanOf(v.plan);
  // Groups {a, b} and {c, d} (t3 meets both), x apart, e shares with {a, b}:
  // x at 0, {a, b} at 1024, {c, d} at 2048, e at 1024.
  EXPECT_EQ(m.offset[v.x], 0);
  EXPECT_EQ(m.offset[v.a], kBytes);
  EXPECT_EQ(m.offset[v.b], kBytes);
  EXPECT_EQ(m.offset[v.c], 2 * kBytes);
  EXPECT_EQ(m.offset[v.d], 2 * kBytes);
  EXPECT_EQ(m.offset[v.e], kBytes);
  EXPECT_EQ(m.arena_bytes, 3 * kBytes);
  EXPECT_EQ(m.unshared_bytes, 6 * kBytes);

  const MemoryPlan kept = PlanOf(MakeViewPlan(true).plan);
  EXPECT_NE(kept.offset[v.b], kept.offset[v.a]);  // copied: b outlives a's next write
  EXPECT_EQ(kept.offset[v.c], kept.offset[v.d]);

  // Run: e = w + relu(x + w) every iteration, the same with views as without.
  for (bool on : {true, false}) {
    SCOPED_TRACE(on ? "planned" : "own buffers");
    RuntimeOptions options;
    options.timeout = milliseconds(20000);
    options.plan_memory = on;
    auto rt = Runtime::Create(v.plan, options).value();
    std::vector<float> w(kFloats);
    for (int64_t i = 0; i < kFloats; ++i) w[i] = 0.125f * static_cast<float>(i % 9) - 0.5f;
    ASSERT_TRUE(
        rt->SetVariable("w", 0, MakeTensor({kFloats}, [&](int64_t i) { return w[i]; })).ok());
    std::vector<TensorMap> feeds;
    for (int64_t it = 0; it < 4; ++it) {
      feeds.push_back({{{"x", 0}, MakeTensor({kFloats}, [it](int64_t i) {
                          return static_cast<double>((i * 5 + it) % 13) - 6.0;
                        })}});
    }
    auto result = rt->Run(4, feeds, {"e", "b"});
    ASSERT_TRUE(result.ok()) << result.status().message();
    EXPECT_EQ(rt->peak_bytes()[0], on ? 4 * kBytes : 7 * kBytes);
    for (int64_t it = 0; it < 4; ++it) {
      const Tensor& e = result.value().fetched[it].at({"e", 0});
      const Tensor& b = result.value().fetched[it].at({"b", 0});
      EXPECT_EQ(b.shape(), Shape({16, 16}));
      for (int64_t i = 0; i < kFloats; ++i) {
        const float x = static_cast<float>((i * 5 + it) % 13) - 6.0f;
        ASSERT_EQ(b.data<float>()[i], x + w[i]) << "iteration " << it << " element " << i;
        ASSERT_EQ(e.data<float>()[i], w[i] + std::max(0.0f, x + w[i])) << "iteration " << it;
      }
    }
  }
}

}  // namespace
}  // namespace ofl
