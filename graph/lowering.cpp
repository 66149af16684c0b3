#include "graph/lowering.h"

#include <map>

#include "graph/matmul_bias_fusion.h"
#include "graph/plan_builder.h"

namespace ofl {

Maybe<proto::Plan> LowerSingleDevice(const OpGraph& graph, const SingleDeviceOptions& options) {
  PlanBuilder builder(1);
  std::map<std::string, int64_t> register_of;
  auto add_register = [&](const std::string& name, bool persistent) {
    int64_t id = builder.AddRegister(name, 0, graph.Desc(name).value(), 1, persistent);
    register_of[name] = id;
    return id;
  };
  for (const std::string& name : graph.input_names()) {
    int64_t reg = add_register(name, false);
    builder.AddTask(proto::TaskProto::SOURCE, 0, 0, {}, {reg})->mutable_op_conf()->set_name(name);
  }
  for (const std::string& name : graph.variable_names()) {
    int64_t reg = add_register(name, true);
    builder.AddTask(proto::TaskProto::VARIABLE, 0, 0, {}, {reg})->mutable_op_conf()->set_name(name);
  }
  const MatmulBiasFusion fusion =
      options.fuse_matmul_bias ? FindMatmulBias(graph) : MatmulBiasFusion::None(graph);
  for (int64_t i = 0; i < static_cast<int64_t>(graph.ops().size()); ++i) {
    if (fusion.folded[i]) continue;  // runs inside the bias_add's matmul_bias task
    const OpNode& node =
        fusion.absorbs[i] >= 0 ? fusion.FusedNode(graph, i) : graph.ops()[i];
    std::vector<int64_t> inputs, outputs;
    for (const std::string& in : node.inputs) inputs.push_back(register_of.at(in));
    for (const std::string& out : node.outputs) outputs.push_back(add_register(out, false));
    proto::OpConf* conf =
        builder.AddTask(proto::TaskProto::COMPUTE, 0, 0, inputs, outputs)->mutable_op_conf();
    conf->set_name(node.name);
    conf->set_op_type(node.type);
    for (const auto& [k, v] : node.attrs.values()) (*conf->mutable_attrs())[k] = AttrToProto(v);
    for (const std::string& in : node.inputs) conf->add_inputs(in);
    for (const std::string& out : node.outputs) conf->add_outputs(out);
  }
  builder.AddInPlaceCtrlEdges();
  return builder.Release();
}

}  // namespace ofl
