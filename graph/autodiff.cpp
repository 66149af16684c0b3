#include "graph/autodiff.h"

#include <set>
#include <vector>

#include "ops/grad.h"

namespace ofl {

namespace {

class GraphGradContext : public GradContext {
 public:
  GraphGradContext(OpGraph* graph, const OpNode& node, std::vector<std::string> output_grads,
                   std::vector<bool> needs)
      : graph_(graph),
        node_(node),
        forward_(graph->ContextOf(node)),
        output_grads_(std::move(output_grads)),
        needs_(std::move(needs)),
        input_grads_(node.inputs.size()) {}

  const OpContext& forward() const override { return forward_; }
  int num_outputs() const override { return static_cast<int>(node_.outputs.size()); }
  const std::string& Input(int i) const override { return node_.inputs.at(i); }
  const std::string& Output(int i) const override { return node_.outputs.at(i); }
  const TensorDesc& OutputDesc(int i) const override {
    desc_cache_ = graph_->Desc(node_.outputs.at(i)).value();
    return desc_cache_;
  }
  std::string OutputGrad(int i) const override { return output_grads_.at(i); }
  bool NeedsInputGrad(int i) const override { return needs_.at(i); }

  Maybe<std::vector<std::string>> Emit(const std::string& op_type,
                                       const std::vector<std::string>& inputs,
                                       const AttrMap& attrs) override {
    std::string name = "grad/" + node_.name + "/" + op_type + "_" + std::to_string(emitted_++);
    return graph_->AddOp(op_type, inputs, attrs, name);
  }
  void SetInputGrad(int i, const std::string& grad) override { input_grads_.at(i) = grad; }
  const std::vector<std::string>& input_grads() const { return input_grads_; }

 private:
  OpGraph* graph_;
  const OpNode& node_;
  OpContext forward_;
  std::vector<std::string> output_grads_;
  std::vector<bool> needs_;
  std::vector<std::string> input_grads_;
  mutable TensorDesc desc_cache_;
  int emitted_ = 0;
};

// Tensors that depend on a trainable variable through floating tensors.
std::set<std::string> RequiringGrad(const OpGraph& graph) {
  std::set<std::string> needs;
  for (const std::string& v : graph.variable_names()) {
    if (graph.variable(v).trainable) needs.insert(v);
  }
  for (const OpNode& node : graph.ops()) {
    bool any = false;
    for (const std::string& in : node.inputs) any = any || needs.count(in) > 0;
    if (!any) continue;
    for (const std::string& out : node.outputs) {
      if (IsFloating(graph.Desc(out).value().dtype)) needs.insert(out);
    }
  }
  return needs;
}

// Sums the pending gradients of one tensor into one name.
Maybe<std::string> SumGrads(OpGraph* graph, const std::string& tensor,
                            const std::vector<std::string>& grads) {
  if (grads.size() == 1) return grads[0];
  OFL_ASSIGN_OR_RETURN(std::vector<std::string> out,
                       graph->AddOp("add_n", grads, {}, "grad/sum/" + tensor));
  return out[0];
}

}  // namespace

Maybe<std::map<std::string, std::string>> AppendBackward(
    OpGraph* graph, const std::map<std::string, std::string>& seeds) {
  std::set<std::string> needs = RequiringGrad(*graph);
  std::map<std::string, std::vector<std::string>> pending;
  for (const auto& [tensor, grad] : seeds) {
    OFL_ASSIGN_OR_RETURN(TensorDesc d, graph->Desc(tensor));
    OFL_ASSIGN_OR_RETURN(TensorDesc g, graph->Desc(grad));
    OFL_ENSURE(d == g, "gradient '", grad, "' of '", tensor, "' has shape ", g.shape, " ",
               DataTypeName(g.dtype), ", expected ", d.shape, " ", DataTypeName(d.dtype));
    pending[tensor].push_back(grad);
  }
  // Snapshot: the loop appends ops to the graph.
  const std::vector<OpNode> forward_ops = graph->ops();
  for (auto it = forward_ops.rbegin(); it != forward_ops.rend(); ++it) {
    const OpNode& node = *it;
    std::vector<std::string> output_grads;
    bool any_grad = false;
    for (const std::string& out : node.outputs) {
      auto p = pending.find(out);
      if (p == pending.end()) {
        output_grads.push_back("");
        continue;
      }
      OFL_ASSIGN_OR_RETURN(std::string g, SumGrads(graph, out, p->second));
      output_grads.push_back(g);
      any_grad = true;
    }
    std::vector<bool> input_needs;
    bool any_need = false;
    for (const std::string& in : node.inputs) {
      input_needs.push_back(needs.count(in) > 0);
      any_need = any_need || input_needs.back();
    }
    if (!any_grad || !any_need) continue;
    OFL_ASSIGN_OR_RETURN(const OpDef* def, OpRegistry::Find(node.type));
    OFL_ENSURE(def->has_grad(), "op '", node.name, "' (", node.type,
               ") has no gradient rule but a trainable variable flows through it");
    GraphGradContext ctx(graph, node, output_grads, input_needs);
    OFL_RETURN_IF_ERROR(def->grad()(ctx));
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      const std::string& g = ctx.input_grads()[i];
      if (g.empty() || !input_needs[i]) continue;
      pending[node.inputs[i]].push_back(g);
    }
  }
  std::map<std::string, std::string> result;
  for (const std::string& v : graph->variable_names()) {
    if (!graph->variable(v).trainable) continue;
    auto p = pending.find(v);
    if (p == pending.end()) continue;
    OFL_ASSIGN_OR_RETURN(std::string g, SumGrads(graph, v, p->second));
    result[v] = g;
  }
  return result;
}

Maybe<std::map<std::string, std::string>> AppendBackwardOfLoss(OpGraph* graph) {
  OFL_ENSURE(!graph->loss().empty(), "the graph has no loss: call SetLoss first");
  OFL_ASSIGN_OR_RETURN(std::vector<std::string> seed,
                       graph->AddOp("ones_like", {graph->loss()}, {}, "grad/seed"));
  return AppendBackward(graph, {{graph->loss(), seed[0]}});
}

}  // namespace ofl
