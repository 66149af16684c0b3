#include "graph/plan_builder.h"

#include "graph/op_graph.h"

namespace ofl {

int64_t PlanBuilder::AddRegister(const std::string& name, int64_t rank, const TensorDesc& desc,
                                 int64_t num_slots, bool persistent) {
  CHECK(rank >= 0 && rank < plan_.num_ranks()) << "register on rank " << rank;
  CHECK_GE(num_slots, 1);
  auto* r = plan_.add_registers();
  r->set_id(plan_.registers_size() - 1);
  r->set_name(name);
  r->set_rank(rank);
  *r->mutable_desc() = DescToProto(desc);
  r->set_num_slots(num_slots);
  r->set_bytes(desc.nbytes());
  r->set_persistent(persistent);
  return r->id();
}

int64_t PlanBuilder::AddCtrlRegister(const std::string& name, int64_t rank) {
  return AddRegister(name, rank, TensorDesc{Shape({0}), DataType::kFloat32});
}

proto::TaskProto* PlanBuilder::AddTask(proto::TaskProto::Kind kind, int64_t rank, int64_t stream,
                                       const std::vector<int64_t>& inputs,
                                       const std::vector<int64_t>& outputs) {
  CHECK(rank >= 0 && rank < plan_.num_ranks()) << "task on rank " << rank;
  auto* t = plan_.add_tasks();
  t->set_id(plan_.tasks_size() - 1);
  t->set_kind(kind);
  t->set_rank(rank);
  t->set_stream(stream);
  for (int64_t id : inputs) t->add_inputs(id);
  for (int64_t id : outputs) t->add_outputs(id);
  return t;
}

}  // namespace ofl
