#include "graph/lowering.h"

#include <map>

namespace ofl {

Maybe<proto::Plan> LowerSingleDevice(const OpGraph& graph) {
  proto::Plan plan;
  plan.set_num_ranks(1);
  std::map<std::string, int64_t> register_of;
  int64_t next_task = 0;
  auto add_register = [&](const std::string& name, bool persistent) {
    const TensorDesc desc = graph.Desc(name).value();
    auto* r = plan.add_registers();
    r->set_id(plan.registers_size() - 1);
    r->set_name(name);
    r->set_rank(0);
    *r->mutable_desc() = DescToProto(desc);
    r->set_num_slots(1);
    r->set_bytes(desc.nbytes());
    r->set_persistent(persistent);
    register_of[name] = r->id();
    return r->id();
  };
  auto add_task = [&](proto::TaskProto::Kind kind) {
    auto* t = plan.add_tasks();
    t->set_id(next_task++);
    t->set_kind(kind);
    t->set_rank(0);
    t->set_stream(0);
    return t;
  };
  for (const std::string& name : graph.input_names()) {
    auto* t = add_task(proto::TaskProto::SOURCE);
    t->mutable_op_conf()->set_name(name);
    t->add_outputs(add_register(name, false));
  }
  for (const std::string& name : graph.variable_names()) {
    auto* t = add_task(proto::TaskProto::VARIABLE);
    t->mutable_op_conf()->set_name(name);
    t->add_outputs(add_register(name, true));
  }
  for (const OpNode& node : graph.ops()) {
    auto* t = add_task(proto::TaskProto::COMPUTE);
    proto::OpConf* conf = t->mutable_op_conf();
    conf->set_name(node.name);
    conf->set_op_type(node.type);
    for (const auto& [k, v] : node.attrs.values()) (*conf->mutable_attrs())[k] = AttrToProto(v);
    for (const std::string& in : node.inputs) {
      conf->add_inputs(in);
      t->add_inputs(register_of.at(in));
    }
    for (const std::string& out : node.outputs) {
      conf->add_outputs(out);
      t->add_outputs(add_register(out, false));
    }
  }
  return plan;
}

}  // namespace ofl
