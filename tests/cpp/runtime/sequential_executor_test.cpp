// The sequential executor: feeds are validated, variables persist, the
// iteration counter advances.
#include <gtest/gtest.h>

#include "oneflow_lite/core/proto/plan.pb.h"
#include "runtime/sequential_executor.h"

namespace ofl {
namespace {

// A hand-written plan: input x (2 floats) and variable v feed add_n.
proto::Plan AddPlan() {
  proto::Plan plan;
  plan.set_num_ranks(1);
  for (const char* name : {"x", "v", "sum/out_0"}) {
    auto* r = plan.add_registers();
    r->set_id(plan.registers_size() - 1);
    r->set_name(name);
    r->mutable_desc()->mutable_shape()->add_dims(2);
    r->mutable_desc()->set_dtype("float32");
    r->set_num_slots(1);
    r->set_bytes(8);
  }
  auto* src = plan.add_tasks();
  src->set_kind(proto::TaskProto::SOURCE);
  src->mutable_op_conf()->set_name("x");
  src->add_outputs(0);
  auto* var = plan.add_tasks();
  var->set_kind(proto::TaskProto::VARIABLE);
  var->mutable_op_conf()->set_name("v");
  var->add_outputs(1);
  auto* add = plan.add_tasks();
  add->set_kind(proto::TaskProto::COMPUTE);
  add->mutable_op_conf()->set_name("sum");
  add->mutable_op_conf()->set_op_type("add_n");
  add->add_inputs(0);
  add->add_inputs(1);
  add->add_outputs(2);
  return plan;
}

TEST(SequentialExecutorTest, RunsAndValidatesFeeds) {
  auto ex = SequentialExecutor::Create(AddPlan()).value();
  Tensor v({2}, DataType::kFloat32);
  v.Fill(10);
  ASSERT_TRUE(ex->SetVariable("v", v).ok());
  Tensor x({2}, DataType::kFloat32);
  x.Fill(1.5);
  std::vector<Tensor> out;
  ASSERT_TRUE(ex->Run({{"x", x}}, {"sum/out_0"}, &out).ok());
  EXPECT_FLOAT_EQ(out[0].data<float>()[1], 11.5f);
  EXPECT_EQ(ex->iteration(), 1);
  // Three registers of two floats each, allocated once: 3 * 8 bytes.
  EXPECT_EQ(ex->peak_bytes(), 24);
  EXPECT_EQ(ex->live_bytes(), 24);

  Status missing = ex->Run({}, {}, &out);
  EXPECT_EQ(missing.message(), "run: input 'x' was not fed");
  Status wrong = ex->Run({{"x", Tensor({3}, DataType::kFloat32)}}, {}, &out);
  EXPECT_EQ(wrong.message(), "run: input 'x' expects shape (2) float32, got (3) float32");
  Status fetch = ex->Run({{"x", x}}, {"nope"}, &out);
  EXPECT_EQ(fetch.message(), "run: cannot fetch unknown tensor 'nope'");
  Status var = ex->SetVariable("v", Tensor({2}, DataType::kFloat64));
  EXPECT_EQ(var.message(), "variable 'v' has shape (2) float32, got (2) float64");
}

TEST(SequentialExecutorTest, RejectsOpsWithoutKernel) {
  proto::Plan plan = AddPlan();
  plan.mutable_tasks(2)->mutable_op_conf()->set_op_type("no_kernel_op");
  auto ex = SequentialExecutor::Create(plan);
  ASSERT_FALSE(ex.ok());
  EXPECT_EQ(ex.status().message(), "op 'no_kernel_op' has no cpu kernel");
}

}  // namespace
}  // namespace ofl
