// One plan across processes at the runtime level (DESIGN.md section 7b):
// 2 processes x 2 ranks run a plan of two all-reduces, one along each axis
// of a 2x2 mesh (groups {0, 2} and {1, 3} span the processes and use Gloo;
// {0, 1} and {2, 3} stay in one process), each process building only its
// ranks; the sums are checked against values worked out by hand. A process
// that dies is named by the store's watch within seconds. Children are this
// binary again (multiprocess.h), every wait bounded.
#include "runtime/process_world.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <thread>

#include "plan_maker.h"
#include "runtime/boxing.h"
#include "runtime/runtime.h"
#include "tests/cpp/runtime/multiprocess.h"

namespace ofl {
namespace {

using proto::TaskProto;
using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr int64_t kN = 5;  // elements per rank

std::shared_ptr<ProcessWorld> JoinWorld() {
  WorldOptions o;
  o.process = mp::EnvInt("OFL_MP_RANK");
  o.num_processes = mp::EnvInt("OFL_MP_SIZE");
  o.devices_per_process = 2;
  o.master_port = mp::EnvInt("OFL_MP_PORT");
  o.job_id = "process-world-test";
  o.gloo.hostname = "127.0.0.1";
  o.timeout = milliseconds(20000);
  auto w = ProcessWorld::Create(o);
  EXPECT_TRUE(w.ok()) << w.status().message();
  return w.ok() ? w.value() : nullptr;
}

// Rank r (process r / 2): x -> all-reduce over its mesh column {r % 2, r % 2 + 2}
// -> all-reduce over its row {2 (r / 2), 2 (r / 2) + 1} -> sink "z".
proto::Plan TwoAxisPlan() {
  PlanMaker p(4);
  for (int64_t r = 0; r < 4; ++r) {
    int64_t x = p.Register("x", r, {kN}), y = p.Register("y", r, {kN});
    int64_t z = p.Register("z", r, {kN});
    p.Source("x", r, 0, x);
    const std::vector<std::vector<int64_t>> groups = {{r % 2, r % 2 + 2},
                                                      {2 * (r / 2), 2 * (r / 2) + 1}};
    const std::vector<int64_t> ids = {r % 2, 2 + r / 2};
    int64_t in = x;
    for (int axis = 0; axis < 2; ++axis) {
      const int64_t out = axis == 0 ? y : z;
      TaskProto* box = p.Task(TaskProto::BOXING, r, 1, axis == 0 ? "y" : "z", "", {in}, {out});
      box->mutable_boxing_conf()->set_kind(proto::BoxingConf::ALL_REDUCE);
      box->mutable_boxing_conf()->set_group_id(ids[axis]);
      for (int64_t m : groups[axis]) box->mutable_boxing_conf()->add_group(m);
      in = out;
    }
    p.Sink("z", r, 0, z);
  }
  proto::Plan plan = p.plan();
  for (int64_t r = 0; r < 4; ++r) plan.add_process_of_rank(r / 2);
  return plan;
}

float X(int64_t rank, int64_t iteration, int64_t i) {
  return static_cast<float>((rank + 1) * (iteration + 1) + i);
}

void RunPlan(ProcessWorld* world) {
  const proto::Plan plan = TwoAxisPlan();
  auto groups = BoxingGroups::Create(plan, milliseconds(20000), {world, world->process(), "s0"});
  ASSERT_TRUE(groups.ok()) << groups.status().message();
  BoxingGroups* g = groups.value().get();
  EXPECT_EQ(g->num_gloo_communicators(), 2);  // this process's two ranks in their column
  RuntimeOptions options;
  options.timeout = milliseconds(20000);
  options.process = world->process();
  options.boxing = [g](const TaskProto& t, const Tensor& in, Tensor* out, const BoxingStream& on) {
    return RunBoxingStep(t, in, out, g->For(t.boxing_conf().group_id(), t.rank()), on);
  };
  options.on_failure = [g](const Status& e) { g->AbortAll(e.message()); };
  auto rt = Runtime::Create(plan, options);
  ASSERT_TRUE(rt.ok()) << rt.status().message();
  const std::vector<int64_t> mine = {2 * world->process(), 2 * world->process() + 1};
  EXPECT_EQ(rt.value()->local_ranks(), mine);
  const int64_t iterations = 3;
  std::vector<TensorMap> feeds(iterations);
  for (int64_t it = 0; it < iterations; ++it) {
    for (int64_t r : mine) {
      Tensor x(Shape({kN}), DataType::kFloat32);
      for (int64_t i = 0; i < kN; ++i) x.data<float>()[i] = X(r, it, i);
      feeds[it][{"x", r}] = x;
    }
  }
  auto result = rt.value()->Run(iterations, feeds, {"z"});
  ASSERT_TRUE(result.ok()) << result.status().message();
  for (int64_t it = 0; it < iterations; ++it) {
    EXPECT_EQ(result.value().fetched[it].size(), 2u);  // this process's ranks only
    for (int64_t r : mine) {
      const Tensor& z = result.value().fetched[it].at({"z", r});
      for (int64_t i = 0; i < kN; ++i) {
        // every rank's x, summed: (1 + 2 + 3 + 4) (it + 1) + 4 i
        EXPECT_EQ(z.data<float>()[i], static_cast<float>(10 * (it + 1) + 4 * i)) << r << " " << i;
      }
    }
  }
  // Each rank sent its half of each 5-element all-reduce in the Gloo column
  // (direct algorithm: n - own + own elements for 2 ranks) over 3 iterations.
  const auto bytes = g->BytesSentByRank();
  for (int64_t r : mine) EXPECT_GT(bytes.at(r), 0);
}

TEST(ProcessWorker, Run) {
  const char* scenario = std::getenv("OFL_MP_SCENARIO");
  if (scenario == nullptr) GTEST_SKIP() << "runs inside processes the world tests spawn";
  std::shared_ptr<ProcessWorld> world = JoinWorld();
  ASSERT_NE(world, nullptr);
  const std::string s = scenario;
  if (s == "plan") {
    RunPlan(world.get());
    ASSERT_TRUE(world->Barrier("done").ok());
  } else if (s == "scopes") {
    // Each operation's keys go two operations later: the store stays small.
    for (int i = 0; i < 5; ++i) {
      const std::string scope = world->NextScope("t");
      EXPECT_EQ(scope, StrCat("t/op", i));
      auto all = world->AllGather(scope + "/x", {static_cast<char>('a' + i)});
      ASSERT_TRUE(all.ok()) << all.status().message();
      EXPECT_EQ(all.value().size(), 2u);
    }
    if (world->process() == 0) {
      for (int i = 0; i < 5; ++i) {
        const bool kept = world->store()->Check({world->Key(StrCat("t/op", i, "/x/0"))}).value();
        EXPECT_EQ(kept, i >= 3) << "op" << i;
      }
    }
    ASSERT_TRUE(world->Barrier("scopes done").ok());
  } else if (s == "lost") {
    if (world->process() == 1) std::_Exit(3);  // dies without leaving the store
    const auto start = std::chrono::steady_clock::now();
    std::string failure;
    while (failure.empty() && std::chrono::steady_clock::now() - start < seconds(10)) {
      failure = world->CheckFailure();
      std::this_thread::sleep_for(milliseconds(20));
    }
    EXPECT_EQ(failure.rfind("lost process 1 (ranks 2..3): its connection to the store", 0), 0u)
        << failure;
    EXPECT_LT(std::chrono::steady_clock::now() - start, seconds(5));
    // A store collective with the lost process stops naming it, not at its timeout.
    Status s = world->Barrier("after");
    EXPECT_FALSE(s.ok());
    EXPECT_NE(s.message().find("lost process 1"), std::string::npos) << s.message();
  } else {
    FAIL() << "unknown scenario " << s;
  }
}

TEST(ProcessWorldTest, TwoProcessesOfTwoRanksRunOnePlanOverGlooAndInProcessGroups) {
  auto children = mp::Run("plan", 2, mp::FreePort(), seconds(90), "ProcessWorker.Run");
  for (const auto& c : children) EXPECT_EQ(c.exit_code, 0) << mp::Outputs(children);
}

TEST(ProcessWorldTest, EachOperationsKeysAreDroppedTwoOperationsLater) {
  auto children = mp::Run("scopes", 2, mp::FreePort(), seconds(60), "ProcessWorker.Run");
  for (const auto& c : children) EXPECT_EQ(c.exit_code, 0) << mp::Outputs(children);
}

TEST(ProcessWorldTest, ALostProcessIsNamedWithItsRanks) {
  auto children = mp::Run("lost", 2, mp::FreePort(), seconds(60), "ProcessWorker.Run");
  EXPECT_EQ(children[0].exit_code, 0) << mp::Outputs(children);
  EXPECT_EQ(children[1].exit_code, 3) << mp::Outputs(children);
}

TEST(ProcessWorldTest, OptionsFromTheLaunchersVariables) {
  setenv("WORLD_SIZE", "4", 1);
  setenv("RANK", "4", 1);
  auto bad = ProcessWorld::OptionsFromEnv();
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "RANK='4' is not an integer in 0..3");
  setenv("RANK", "2", 1);
  setenv("MASTER_PORT", "29501", 1);
  setenv("OFL_DEVICES_PER_PROCESS", "3", 1);
  auto ok = ProcessWorld::OptionsFromEnv();
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_EQ(ok.value().process, 2);
  EXPECT_EQ(ok.value().num_processes, 4);
  EXPECT_EQ(ok.value().devices_per_process, 3);
  EXPECT_EQ(ok.value().master_port, 29501);
  for (const char* v : {"WORLD_SIZE", "RANK", "MASTER_PORT", "OFL_DEVICES_PER_PROCESS"}) {
    unsetenv(v);
  }
  auto one = ProcessWorld::OptionsFromEnv();
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(one.value().num_processes, 1);
}

}  // namespace
}  // namespace ofl
