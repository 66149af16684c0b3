#include "oneflow_lite/api/op_tools.h"

#include "graph/autodiff.h"
#include "oneflow_lite/api/session.h"

namespace ofl {

namespace {
std::string ArgTensorName(int i) { return "arg" + std::to_string(i); }

// A graph whose inputs are variables (trainable when floating) feeding one op.
Maybe<std::vector<std::string>> BuildOneOp(OpGraph* g, const std::string& op_type,
                                           const std::vector<Tensor>& inputs,
                                           const AttrMap& attrs) {
  std::vector<std::string> names;
  for (size_t i = 0; i < inputs.size(); ++i) {
    OFL_RETURN_IF_ERROR(
        g->AddVariable(ArgTensorName(i), inputs[i], IsFloating(inputs[i].dtype())));
    names.push_back(ArgTensorName(i));
  }
  return g->AddOp(op_type, names, attrs, op_type);
}
}  // namespace

Maybe<std::vector<Tensor>> RunOp(const std::string& op_type, const std::vector<Tensor>& inputs,
                                 const AttrMap& attrs) {
  OpGraph g;
  OFL_ASSIGN_OR_RETURN(std::vector<std::string> outs, BuildOneOp(&g, op_type, inputs, attrs));
  OFL_ASSIGN_OR_RETURN(auto session, Session::Create(g));
  std::vector<Tensor> results;
  OFL_RETURN_IF_ERROR(session->Run({}, outs, &results));
  // Mutable inputs are outputs too: return their new values after the outputs.
  OFL_ASSIGN_OR_RETURN(const OpDef* def, OpRegistry::Find(op_type));
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!def->is_mutable_input(static_cast<int>(i))) continue;
    OFL_ASSIGN_OR_RETURN(Tensor t, session->GetVariable(ArgTensorName(i)));
    results.push_back(t);
  }
  return results;
}

Maybe<std::vector<Tensor>> RunOpGrad(const std::string& op_type, const std::vector<Tensor>& inputs,
                                     const AttrMap& attrs,
                                     const std::vector<Tensor>& output_grads) {
  OpGraph g;
  OFL_ASSIGN_OR_RETURN(std::vector<std::string> outs, BuildOneOp(&g, op_type, inputs, attrs));
  OFL_ENSURE(output_grads.size() == outs.size(), op_type, ": ", output_grads.size(),
             " output gradients given for ", outs.size(), " outputs");
  std::map<std::string, std::string> seeds;
  std::map<std::string, Tensor> feeds;
  for (size_t i = 0; i < outs.size(); ++i) {
    if (!output_grads[i].defined() || output_grads[i].numel() == 0) continue;
    std::string name = "grad_of_out" + std::to_string(i);
    OFL_RETURN_IF_ERROR(g.AddInput(name, {output_grads[i].shape(), output_grads[i].dtype()}));
    seeds[outs[i]] = name;
    feeds[name] = output_grads[i];
  }
  OFL_ASSIGN_OR_RETURN(auto grads, AppendBackward(&g, seeds));
  std::vector<std::string> fetches;
  std::vector<int> fetched_input;
  for (size_t i = 0; i < inputs.size(); ++i) {
    auto it = grads.find(ArgTensorName(i));
    if (it == grads.end()) continue;
    fetches.push_back(it->second);
    fetched_input.push_back(static_cast<int>(i));
  }
  OFL_ASSIGN_OR_RETURN(auto session, Session::Create(g));
  std::vector<Tensor> results;
  OFL_RETURN_IF_ERROR(session->Run(feeds, fetches, &results));
  std::vector<Tensor> per_input(inputs.size());
  for (size_t k = 0; k < fetched_input.size(); ++k) per_input[fetched_input[k]] = results[k];
  return per_input;
}

Maybe<OpInfo> InspectOp(const std::string& op_type, const std::vector<TensorDesc>& inputs,
                        const AttrMap& attrs) {
  OFL_ASSIGN_OR_RETURN(const OpDef* def, OpRegistry::Find(op_type));
  OpContext ctx;
  ctx.op_type = op_type;
  ctx.inputs = inputs;
  ctx.attrs = attrs;
  OpInfo info;
  OFL_ASSIGN_OR_RETURN(info.outputs, def->Infer(&ctx));
  info.cost = def->EstimateCost(ctx, info.outputs);
  info.signatures = def->SbpSignatures(ctx);
  return info;
}

}  // namespace ofl
