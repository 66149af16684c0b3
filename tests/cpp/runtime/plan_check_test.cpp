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

}  // namespace
}  // namespace ofl
