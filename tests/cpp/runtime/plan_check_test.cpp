// CheckPlan (runtime/plan_check.h): what Runtime::Create checks before it
// allocates anything. The cases are the damaged plans fuzz/fuzz_plan.cpp
// feeds it, each refused with a message naming the task or register.
#include "runtime/plan_check.h"

#include <gtest/gtest.h>

#include "plan_maker.h"

namespace ofl {
namespace {

// x -> scalar_mul -> y -> sink, on one rank.
proto::Plan SmallPlan() {
  PlanMaker m(1);
  int64_t x = m.Register("x", 0, {2});
  int64_t y = m.Register("y", 0, {2});
  m.Source("x", 0, 0, x);
  SetAttr(m.Compute("scalar_mul", "scale", 0, 0, {x}, {y}), "value", 2.0);
  m.Sink("out", 0, 0, y);
  return m.plan();
}

TEST(CheckPlanTest, AcceptsAWellFormedPlanAndNamesEachRegistersWriter) {
  Maybe<std::vector<int64_t>> producer = CheckPlan(SmallPlan());
  ASSERT_TRUE(producer.ok()) << producer.status().message();
  EXPECT_EQ(producer.value(), (std::vector<int64_t>{0, 1}));
}

TEST(CheckPlanTest, RefusesDamagedPlansByName) {
  proto::Plan no_ranks = SmallPlan();
  no_ranks.set_num_ranks(0);
  EXPECT_EQ(CheckPlan(no_ranks).status().message(), "plan: num_ranks is 0");

  proto::Plan no_value = SmallPlan();
  (*no_value.mutable_tasks(1)->mutable_op_conf()->mutable_attrs())["value"].Clear();
  EXPECT_EQ(CheckPlan(no_value).status().message(),
            "plan: task 1 (scalar_mul 'scale') has attribute 'value' with no value");

  proto::Plan unknown_kind = SmallPlan();
  unknown_kind.mutable_tasks(1)->set_kind(static_cast<proto::TaskProto::Kind>(77));
  EXPECT_NE(CheckPlan(unknown_kind).status().message().find("has unknown kind 77"),
            std::string::npos);

  proto::Plan no_output = SmallPlan();
  no_output.mutable_tasks(0)->clear_outputs();
  EXPECT_EQ(CheckPlan(no_output).status().message(),
            "plan: SOURCE task 0 (source 'x') has no output register");

  proto::Plan no_input = SmallPlan();
  no_input.mutable_tasks(2)->clear_inputs();
  EXPECT_NE(CheckPlan(no_input).status().message().find("SINK task 2"), std::string::npos);

  proto::Plan two_writers = SmallPlan();
  two_writers.mutable_tasks(1)->add_outputs(0);
  EXPECT_EQ(CheckPlan(two_writers).status().message(),
            "plan: register 'x' is written by task 0 and task 1");

  proto::Plan out_of_range = SmallPlan();
  out_of_range.mutable_tasks(1)->add_inputs(9);
  EXPECT_EQ(CheckPlan(out_of_range).status().message(),
            "plan: task 1 (scalar_mul 'scale') names register 9 of 2");
}

TEST(CheckPlanTest, TasksAndTheirRegistersShareTheRanksDevice) {
  proto::Plan named = SmallPlan();  // empty device fields mean cpu:<rank>
  for (auto& r : *named.mutable_registers()) r.set_device("cpu:0");
  for (auto& t : *named.mutable_tasks()) t.set_device("cpu:0");
  ASSERT_TRUE(CheckPlan(named).ok()) << CheckPlan(named).status().message();

  proto::Plan elsewhere = SmallPlan();
  elsewhere.mutable_registers(1)->set_device("cuda:0");
  EXPECT_EQ(CheckPlan(elsewhere).status().message(),
            "plan: task 1 (scalar_mul 'scale') on cpu:0 uses register 'y' (id 1) on cuda:0 "
            "(a task's registers are on its device; only CPU devices share memory)");

  proto::Plan other_cpu = SmallPlan();  // virtual CPU devices share the host's memory
  other_cpu.set_num_ranks(2);
  other_cpu.mutable_registers(1)->set_rank(1);
  other_cpu.mutable_registers(1)->set_device("cpu:1");
  EXPECT_TRUE(CheckPlan(other_cpu).ok()) << CheckPlan(other_cpu).status().message();

  proto::Plan split_rank = SmallPlan();
  split_rank.mutable_tasks(2)->set_device("cuda:0");
  EXPECT_EQ(CheckPlan(split_rank).status().message(),
            "plan: task 2 (sink 'out') of rank 0 is on cuda:0, task 0 (source 'x') of that rank "
            "on cpu:0 (a rank is one device)");

  proto::Plan bad_name = SmallPlan();
  bad_name.mutable_registers(0)->set_device("gpu:0");
  EXPECT_EQ(CheckPlan(bad_name).status().message(),
            "plan: register 'x': device 'gpu:0': unknown device type 'gpu' (expected cpu or cuda)");

  proto::Plan bad_index = SmallPlan();
  bad_index.mutable_tasks(1)->set_device("cpu:one");
  EXPECT_EQ(CheckPlan(bad_index).status().message(),
            "plan: task 1 (scalar_mul 'scale'): device 'cpu:one': index 'one' is not an integer "
            "in [0, 2147483647]");
}

}  // namespace
}  // namespace ofl
