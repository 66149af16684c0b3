#include "graph/plan_builder.h"

#include <algorithm>
#include <map>
#include <utility>

#include "graph/op_graph.h"

namespace ofl {

std::string PlanBuilder::DeviceOf(int64_t rank) const {
  return Device{device_types_.at(rank), static_cast<int>(rank)}.ToString();
}

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
  r->set_device(DeviceOf(rank));
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
  t->set_device(DeviceOf(rank));
  for (int64_t id : inputs) t->add_inputs(id);
  for (int64_t id : outputs) t->add_outputs(id);
  return t;
}

void PlanBuilder::AddInPlaceCtrlEdges() {
  std::map<int64_t, std::vector<int64_t>> readers;  // register -> tasks reading it
  for (const auto& t : plan_.tasks()) {
    for (int64_t r : t.inputs()) readers[r].push_back(t.id());
  }
  std::vector<std::pair<int64_t, int64_t>> edges;  // (reader task, writer task)
  for (const auto& t : plan_.tasks()) {
    if (t.kind() != proto::TaskProto::COMPUTE) continue;
    const OpDef* def = OpRegistry::Find(t.op_conf().op_type()).value();
    for (int i = 0; i < t.inputs_size(); ++i) {
      if (!def->is_mutable_input(i)) continue;
      for (int64_t reader : readers[t.inputs(i)]) {
        if (reader != t.id()) edges.emplace_back(reader, t.id());
      }
    }
  }
  std::sort(edges.begin(), edges.end());
  edges.erase(std::unique(edges.begin(), edges.end()), edges.end());
  for (const auto& [reader, writer] : edges) {
    const int64_t rank = plan_.tasks(writer).rank();
    const int64_t reg = AddCtrlRegister(StrCat("ctrl/", plan_.tasks(reader).op_conf().name(), "->",
                                               plan_.tasks(writer).op_conf().name()),
                                        rank);
    const int64_t period = plan_.tasks(writer).period();
    if (period > 1) plan_.mutable_registers(reg)->set_period(period);
    plan_.mutable_tasks(reader)->add_ctrl_outputs(reg);
    plan_.mutable_tasks(writer)->add_ctrl_inputs(reg);
  }
}

}  // namespace ofl
