// The plan simulation (graph/plan_simulation.h) against hand-built plans
// whose step times are worked out by hand in each test: a chain, register
// slots, a diamond over two streams with message latency, compute
// overlapping a boxing, two ranks waiting on each other in a collective,
// and pipeline micro-batches over two ranks.
#include "graph/plan_simulation.h"

#include <gtest/gtest.h>

#include <vector>

namespace ofl {
namespace {

// Builds a Plan by hand: registers and tasks, ids in order.
class PlanMaker {
 public:
  int64_t Reg(int64_t rank, int64_t slots = 2) {
    proto::RegisterDesc* r = plan_.add_registers();
    r->set_id(plan_.registers_size() - 1);
    r->set_name("r" + std::to_string(r->id()));
    r->set_rank(rank);
    r->set_num_slots(slots);
    return r->id();
  }
  int64_t Task(int64_t rank, int64_t stream, const std::vector<int64_t>& in,
               const std::vector<int64_t>& out, double seconds) {
    proto::TaskProto* t = plan_.add_tasks();
    t->set_id(plan_.tasks_size() - 1);
    t->set_kind(proto::TaskProto::COMPUTE);
    t->set_rank(rank);
    t->set_stream(stream);
    for (int64_t r : in) t->add_inputs(r);
    for (int64_t r : out) t->add_outputs(r);
    seconds_.push_back(seconds);
    plan_.set_num_ranks(std::max(plan_.num_ranks(), rank + 1));
    return t->id();
  }
  // A BOXING task that is one member of collective `group_id` over `group`.
  int64_t Collective(int64_t rank, int64_t stream, const std::vector<int64_t>& in,
                     const std::vector<int64_t>& out, double seconds, int64_t group_id,
                     const std::vector<int64_t>& group) {
    const int64_t id = Task(rank, stream, in, out, seconds);
    proto::TaskProto* t = plan_.mutable_tasks(static_cast<int>(id));
    t->set_kind(proto::TaskProto::BOXING);
    t->mutable_boxing_conf()->set_kind(proto::BoxingConf::ALL_REDUCE);
    t->mutable_boxing_conf()->set_group_id(group_id);
    for (int64_t r : group) t->mutable_boxing_conf()->add_group(r);
    return id;
  }
  SimulatedRun Simulate(int64_t iterations = 1, double message_s = 0) const {
    SimulationOptions options;
    options.iterations = iterations;
    options.message_s = message_s;
    Maybe<SimulatedRun> run = SimulatePlan(plan_, seconds_, options);
    EXPECT_TRUE(run.ok()) << run.status().ToString();
    return run.ok() ? run.value() : SimulatedRun{};
  }
  const proto::Plan& plan() const { return plan_; }
  std::vector<double>& seconds() { return seconds_; }

 private:
  proto::Plan plan_;
  std::vector<double> seconds_;
};

void ExpectNear(double actual, double expected) {
  EXPECT_NEAR(actual, expected, 1e-12 + 1e-9 * expected);
}

// The first act of `task` in `run`.
const SimulatedAct& ActOf(const SimulatedRun& run, int64_t task, int64_t act = 0) {
  for (const SimulatedAct& a : run.acts) {
    if (a.task == task && a.act == act) return a;
  }
  ADD_FAILURE() << "no act " << act << " of task " << task;
  return run.acts.front();
}

TEST(PlanSimulationTest, ChainOnOneThreadIsTheSumOfItsTasks) {
  PlanMaker m;
  const int64_t ra = m.Reg(0), rb = m.Reg(0);
  const int64_t a = m.Task(0, 0, {}, {ra}, 1.0);
  const int64_t b = m.Task(0, 0, {ra}, {rb}, 2.0);
  const int64_t c = m.Task(0, 0, {rb}, {}, 3.0);
  SimulatedRun run = m.Simulate();
  ExpectNear(run.step_s, 1 + 2 + 3);
  ExpectNear(ActOf(run, b).start_s, 1.0);
  // The critical path is the chain itself.
  ASSERT_EQ(run.critical_path.size(), 3u);
  EXPECT_EQ(run.acts[run.critical_path[0]].task, a);
  EXPECT_EQ(run.acts[run.critical_path[2]].task, c);
  // Three iterations on one thread: three times the chain.
  ExpectNear(m.Simulate(3).step_s, 3 * 6.0);
  // 0.25 s of thread time before each act: 3 x 0.25 more.
  SimulationOptions options;
  options.act_overhead_s = 0.25;
  ExpectNear(SimulatePlan(m.plan(), m.seconds(), options).value().step_s, 6.75);
}

TEST(PlanSimulationTest, PeriodsReadAVariableOncePerStep) {
  // V (period 2, 1 s) writes w (period 2, one slot), read by C (1 s) in each of
  // 2 iterations; U (period 2, 1 s) reads C's output after both: V 0-1, C 1-2,
  // C 2-3, U 3-4.
  PlanMaker m;
  const int64_t w = m.Reg(0, 1), y = m.Reg(0, 2);
  const int64_t v = m.Task(0, 0, {}, {w}, 1.0);
  const int64_t c = m.Task(0, 0, {w}, {y}, 1.0);
  const int64_t u = m.Task(0, 0, {y}, {}, 1.0);
  proto::Plan plan = m.plan();
  plan.mutable_tasks(static_cast<int>(v))->set_period(2);
  plan.mutable_tasks(static_cast<int>(u))->set_period(2);
  plan.mutable_registers(static_cast<int>(w))->set_period(2);
  plan.mutable_registers(static_cast<int>(y))->set_period(2);
  SimulationOptions options;
  options.iterations = 2;
  SimulatedRun run = SimulatePlan(plan, m.seconds(), options).value();
  ExpectNear(run.step_s, 4.0);
  ExpectNear(ActOf(run, c, 1).start_s, 2.0);
  ExpectNear(ActOf(run, u).start_s, 3.0);
  EXPECT_EQ(run.acts.size(), 4u);
  options.iterations = 3;  // no multiple of the period
  EXPECT_FALSE(SimulatePlan(plan, m.seconds(), options).ok());
}

TEST(PlanSimulationTest, RegisterSlotsLetTheProducerRunAhead) {
  // P (stream 0, 1 s) -> C (stream 1, 3 s), three iterations.
  for (int64_t slots : {1, 2}) {
    PlanMaker m;
    const int64_t r = m.Reg(0, slots);
    m.Task(0, 0, {}, {r}, 1.0);
    const int64_t c = m.Task(0, 1, {r}, {}, 3.0);
    SimulatedRun run = m.Simulate(3);
    if (slots == 1) {
      // P0 0-1, C0 1-4; P1 waits for C0's free: 4-5, C1 5-8; P2 8-9, C2 9-12.
      ExpectNear(run.step_s, 12.0);
      ExpectNear(ActOf(run, c, 2).start_s, 9.0);
    } else {
      // P0 0-1, P1 1-2, P2 waits for slot 0 (freed at 4): 4-5; C0 1-4, C1 4-7,
      // C2 7-10.
      ExpectNear(run.step_s, 10.0);
      ExpectNear(ActOf(run, c, 1).start_s, 4.0);
    }
  }
}

TEST(PlanSimulationTest, DiamondOverTwoStreamsWithMessageLatency) {
  // A (s0, 1) -> B (s0, 2) and C (s1, 5) -> D (s0, 1).
  PlanMaker m;
  const int64_t ra = m.Reg(0), rb = m.Reg(0), rc = m.Reg(0);
  m.Task(0, 0, {}, {ra}, 1.0);
  m.Task(0, 0, {ra}, {rb}, 2.0);
  const int64_t c = m.Task(0, 1, {ra}, {rc}, 5.0);
  const int64_t d = m.Task(0, 0, {rb, rc}, {}, 1.0);
  // No latency: 1 + max(2, 5) + 1.
  ExpectNear(m.Simulate().step_s, 7.0);
  // 0.5 s per message between threads: C starts at 1.5, ends 6.5, D starts 7.
  SimulatedRun run = m.Simulate(1, 0.5);
  ExpectNear(ActOf(run, c).start_s, 1.5);
  ExpectNear(ActOf(run, d).start_s, 7.0);
  ExpectNear(run.step_s, 8.0);
  EXPECT_EQ(run.acts[run.critical_path.back()].task, d);
  EXPECT_EQ(run.acts[run.critical_path[run.critical_path.size() - 2]].task, c);
}

TEST(PlanSimulationTest, ComputeOverlapsABoxing) {
  // Each of 2 ranks: G (s0, 1 s) -> all-reduce (s1, 4 s); H (s0, 3 s) needs
  // nothing.
  PlanMaker m;
  std::vector<int64_t> h(2);
  for (int64_t rank : {0, 1}) {
    const int64_t g = m.Reg(rank);
    m.Task(rank, 0, {}, {g}, 1.0);
    m.Collective(rank, 1, {g}, {}, 4.0, 7, {0, 1});
    h[rank] = m.Task(rank, 0, {}, {}, 3.0);
  }
  SimulatedRun run = m.Simulate();
  // G 0-1, all-reduce 1-5 on stream 1, H 1-4 on stream 0: 5, not 1 + 4 + 3 = 8.
  ExpectNear(run.step_s, 5.0);
  ExpectNear(ActOf(run, h[1]).start_s, 1.0);
  ExpectNear(run.rank_end_s[0], 5.0);
  ExpectNear(run.rank_end_s[1], 5.0);
}

TEST(PlanSimulationTest, TwoRanksWaitOnEachOther) {
  // Rank 0: A (2 s) -> all-reduce (1 s) -> C (1 s); rank 1: A' (5 s) ->
  // all-reduce.
  PlanMaker m;
  const int64_t a0 = m.Reg(0), x0 = m.Reg(0), a1 = m.Reg(1);
  m.Task(0, 0, {}, {a0}, 2.0);
  const int64_t ar0 = m.Collective(0, 1, {a0}, {x0}, 1.0, 3, {0, 1});
  const int64_t c0 = m.Task(0, 0, {x0}, {}, 1.0);
  const int64_t a1_task = m.Task(1, 0, {}, {a1}, 5.0);
  const int64_t ar1 = m.Collective(1, 1, {a1}, {}, 1.0, 3, {0, 1});
  SimulatedRun run = m.Simulate();
  // Rank 0 enters at 2 and waits for rank 1 (enters at 5): both end at 6; C
  // 6-7.
  ExpectNear(ActOf(run, ar0).start_s, 2.0);
  ExpectNear(ActOf(run, ar0).wait_s, 3.0);
  ExpectNear(ActOf(run, ar0).end_s, 6.0);
  ExpectNear(ActOf(run, ar1).wait_s, 0.0);
  ExpectNear(ActOf(run, ar1).end_s, 6.0);
  ExpectNear(run.rank_end_s[0], 7.0);
  ExpectNear(run.rank_end_s[1], 6.0);
  ExpectNear(run.step_s, 7.0);
  EXPECT_EQ(run.slowest_rank, 0);
  // Critical path: A' on rank 1 -> its all-reduce -> rank 0's all-reduce -> C.
  ASSERT_EQ(run.critical_path.size(), 4u);
  EXPECT_EQ(run.acts[run.critical_path[0]].task, a1_task);
  EXPECT_EQ(run.acts[run.critical_path[1]].task, ar1);
  EXPECT_EQ(run.acts[run.critical_path[2]].task, ar0);
  EXPECT_EQ(run.acts[run.critical_path[3]].task, c0);
}

TEST(PlanSimulationTest, PipelineMicroBatchesOverlapStages) {
  // Stage 0 on rank 0: S0 (2 s) -> send (0.5 s); stage 1 on rank 1: recv -> S1
  // (2 s).
  PlanMaker m;
  const int64_t out0 = m.Reg(0), in1 = m.Reg(1);
  m.Task(0, 0, {}, {out0}, 2.0);
  m.Collective(0, 1, {out0}, {}, 0.5, 9, {0, 1});
  m.Collective(1, 1, {}, {in1}, 0.5, 9, {0, 1});
  const int64_t s1 = m.Task(1, 0, {in1}, {}, 2.0);
  SimulatedRun run = m.Simulate(4);
  // S0 k: [2k, 2k+2]; transfer k: [2k+2, 2k+2.5]; S1 k: [2k+2.5, 2k+4.5]; last
  // ends 10.5 (serial: 4 x 4.5 = 18).
  for (int64_t k = 0; k < 4; ++k) ExpectNear(ActOf(run, s1, k).start_s, 2.0 * k + 2.5);
  ExpectNear(run.step_s, 10.5);
}

TEST(PlanSimulationTest, RejectsBadInput) {
  PlanMaker m;
  const int64_t r = m.Reg(0);
  m.Task(0, 0, {}, {r}, 1.0);
  m.Task(0, 0, {r}, {}, 1.0);
  EXPECT_FALSE(SimulatePlan(m.plan(), {1.0}, {}).ok());  // one time for two tasks
  EXPECT_FALSE(SimulatePlan(m.plan(), {1.0, -1.0}, {}).ok());
  SimulationOptions zero;
  zero.iterations = 0;
  EXPECT_FALSE(SimulatePlan(m.plan(), {1.0, 1.0}, zero).ok());
  // A collective whose other member never comes: the plan cannot finish.
  PlanMaker lonely;
  lonely.Collective(0, 1, {}, {}, 1.0, 0, {0, 1});
  Maybe<SimulatedRun> run = SimulatePlan(lonely.plan(), lonely.seconds(), {});
  ASSERT_FALSE(run.ok());
  EXPECT_NE(run.status().message().find("cannot finish"), std::string::npos);
}

}  // namespace
}  // namespace ofl
