#include "graph/distributed_lowering.h"

#include <algorithm>
#include <map>
#include <set>

#include "graph/boxing.h"
#include "graph/boxing_tasks.h"
#include "graph/plan_builder.h"
#include "oneflow_lite/core/slicing.h"

namespace ofl {

namespace {

constexpr int64_t kComputeStream = 0;

// Per rank index of the placement: the register holding a tensor's slice.
struct Layout {
  NdSbp sbp;
  std::vector<int64_t> registers;
};

class Lowerer {
 public:
  Lowerer(const OpGraph& graph, const Strategy& strategy, const LoweringOptions& options)
      : graph_(graph), strategy_(strategy), placement_(strategy.placement()), options_(options),
        builder_(*std::max_element(placement_.ranks().begin(), placement_.ranks().end()) + 1) {}

  Maybe<proto::Plan> Run(const std::vector<std::string>& fetches) {
    OFL_RETURN_IF_ERROR(strategy_.Validate(graph_));
    for (const std::string& f : fetches) {
      OFL_ENSURE(graph_.HasTensor(f), "fetch: unknown tensor '", f, "'");
    }
    for (const std::string& name : graph_.input_names()) AddSource(name, proto::TaskProto::SOURCE);
    for (const std::string& name : graph_.variable_names()) {
      AddSource(name, proto::TaskProto::VARIABLE);
    }
    for (const OpNode& node : graph_.ops()) OFL_RETURN_IF_ERROR(AddOp(node));
    for (const std::string& f : fetches) AddSink(f);
    AddInPlaceCtrlEdges();
    return builder_.Release();
  }

 private:
  int64_t Rank(size_t index) const { return placement_.ranks()[index]; }

  // A register for rank `index`'s slice of `tensor` laid out as `sbp`.
  int64_t AddSliceRegister(const std::string& tensor, const NdSbp& sbp, size_t index,
                           int64_t slots, bool persistent) {
    const TensorDesc logical = graph_.Desc(tensor).value();
    TensorSlice slice = SliceOf(logical.shape, placement_.hierarchy(), sbp,
                                placement_.Coordinates(static_cast<int64_t>(index)));
    int64_t id = builder_.AddRegister(tensor, Rank(index), {slice.shape, logical.dtype}, slots,
                                      persistent);
    proto::RegisterDesc* r = builder_.mutable_register(id);
    for (int64_t d : logical.shape.dims()) r->mutable_logical_shape()->add_dims(d);
    for (int64_t o : slice.offset) r->add_logical_offset(o);
    r->set_nd_sbp(sbp.ToString());
    return id;
  }

  void AddSource(const std::string& name, proto::TaskProto::Kind kind) {
    const bool variable = kind == proto::TaskProto::VARIABLE;
    Layout layout{strategy_.sources().at(name), {}};
    for (size_t i = 0; i < placement_.ranks().size(); ++i) {
      int64_t reg = AddSliceRegister(name, layout.sbp, i, variable ? 1 : options_.num_slots,
                                     variable);
      builder_.AddTask(kind, Rank(i), kComputeStream, {}, {reg})->mutable_op_conf()->set_name(name);
      layout.registers.push_back(reg);
    }
    layouts_[name] = layout;
  }

  // The registers holding `tensor` as `want`, boxing once per (tensor, want).
  Maybe<std::vector<int64_t>> RegistersAs(const std::string& tensor, const NdSbp& want) {
    const Layout& have = layouts_.at(tensor);
    if (have.sbp == want) return have.registers;
    auto key = std::make_pair(tensor, want.ToString());
    auto cached = boxed_.find(key);
    if (cached != boxed_.end()) return cached->second;
    OFL_ASSIGN_OR_RETURN(TensorDesc desc, graph_.Desc(tensor));
    OFL_ASSIGN_OR_RETURN(BoxingPlan plan,
                         PlanBoxing(desc, placement_, have.sbp, placement_, want, tensor));
    std::vector<int64_t> regs =
        EmitBoxing(plan, tensor, have.registers, &builder_, options_.num_slots);
    boxed_[key] = regs;
    return regs;
  }

  Status AddOp(const OpNode& node) {
    const NdSbpSignature& sig = strategy_.signature(node.name);
    std::vector<std::vector<int64_t>> inputs;
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      OFL_ASSIGN_OR_RETURN(std::vector<int64_t> regs, RegistersAs(node.inputs[i], sig.inputs[i]));
      inputs.push_back(regs);
    }
    std::vector<Layout> outputs(node.outputs.size());
    for (size_t o = 0; o < node.outputs.size(); ++o) outputs[o].sbp = sig.outputs[o];
    for (size_t i = 0; i < placement_.ranks().size(); ++i) {
      std::vector<int64_t> in_regs, out_regs;
      for (const auto& regs : inputs) in_regs.push_back(regs[i]);
      for (size_t o = 0; o < node.outputs.size(); ++o) {
        int64_t reg = AddSliceRegister(node.outputs[o], sig.outputs[o], i, options_.num_slots,
                                       false);
        out_regs.push_back(reg);
        outputs[o].registers.push_back(reg);
      }
      proto::OpConf* conf =
          builder_.AddTask(proto::TaskProto::COMPUTE, Rank(i), kComputeStream, in_regs, out_regs)
              ->mutable_op_conf();
      conf->set_name(node.name);
      conf->set_op_type(node.type);
      for (const auto& [k, v] : node.attrs.values()) (*conf->mutable_attrs())[k] = AttrToProto(v);
      for (const std::string& in : node.inputs) conf->add_inputs(in);
      for (const std::string& out : node.outputs) conf->add_outputs(out);
    }
    for (size_t o = 0; o < node.outputs.size(); ++o) layouts_[node.outputs[o]] = outputs[o];
    return Status::OK();
  }

  void AddSink(const std::string& tensor) {
    const Layout& layout = layouts_.at(tensor);
    for (size_t i = 0; i < placement_.ranks().size(); ++i) {
      builder_.AddTask(proto::TaskProto::SINK, Rank(i), kComputeStream, {layout.registers[i]}, {})
          ->mutable_op_conf()
          ->set_name(tensor);
    }
  }

  // Every other reader of a register that a task writes in place must act
  // first in the same iteration: a ctrl register from each reader to it.
  void AddInPlaceCtrlEdges() {
    const proto::Plan& plan = builder_.plan();
    std::map<int64_t, std::vector<int64_t>> readers;  // register -> tasks reading it
    for (const auto& t : plan.tasks()) {
      for (int64_t r : t.inputs()) readers[r].push_back(t.id());
    }
    std::vector<std::pair<int64_t, int64_t>> edges;  // (reader task, writer task)
    for (const auto& t : plan.tasks()) {
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
      const int64_t rank = plan.tasks(writer).rank();
      int64_t reg = builder_.AddCtrlRegister(
          StrCat("ctrl/", plan.tasks(reader).op_conf().name(), "->",
                 plan.tasks(writer).op_conf().name()),
          rank);
      builder_.mutable_task(reader)->add_ctrl_outputs(reg);
      builder_.mutable_task(writer)->add_ctrl_inputs(reg);
    }
  }

  const OpGraph& graph_;
  const Strategy& strategy_;
  const Placement& placement_;
  LoweringOptions options_;
  PlanBuilder builder_;
  std::map<std::string, Layout> layouts_;
  std::map<std::pair<std::string, std::string>, std::vector<int64_t>> boxed_;
};

}  // namespace

Maybe<proto::Plan> LowerDistributed(const OpGraph& graph, const Strategy& strategy,
                                    const std::vector<std::string>& fetches,
                                    const LoweringOptions& options) {
  Lowerer lowerer(graph, strategy, options);
  return lowerer.Run(fetches);
}

}  // namespace ofl
