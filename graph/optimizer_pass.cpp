#include "graph/optimizer_pass.h"

namespace ofl {

namespace {
Status CheckConf(const OptimizerConf& c) {
  OFL_ENSURE(c.kind == "sgd" || c.kind == "adam" || c.kind == "adamw", "optimizer: unknown kind '",
             c.kind, "' (expected sgd, adam or adamw)");
  OFL_ENSURE(c.lr >= 0, "optimizer ", c.kind, ": lr=", c.lr, " is negative");
  OFL_ENSURE(c.momentum >= 0, "optimizer ", c.kind, ": momentum=", c.momentum, " is negative");
  OFL_ENSURE(c.weight_decay >= 0, "optimizer ", c.kind, ": weight_decay=", c.weight_decay,
             " is negative");
  OFL_ENSURE(c.beta1 >= 0 && c.beta1 < 1 && c.beta2 >= 0 && c.beta2 < 1, "optimizer ", c.kind,
             ": betas (", c.beta1, ", ", c.beta2, ") must lie in [0, 1)");
  OFL_ENSURE(c.eps > 0, "optimizer ", c.kind, ": eps=", c.eps, " must be positive");
  OFL_ENSURE(c.clip_grad_max_norm >= 0, "optimizer ", c.kind,
             ": clip_grad_max_norm=", c.clip_grad_max_norm, " is negative");
  return Status::OK();
}

// Global-norm clipping: per gradient the sum of its squares (an S-sharded
// gradient gives a P partial sum, a P one is boxed first: squaring is not
// linear), their add_n, sqrt, the clip factor, and every gradient times it.
// Returns the clipped gradient per variable.
Maybe<std::map<std::string, std::string>> AppendClipping(
    OpGraph* graph, double max_norm, const std::vector<std::string>& variables,
    const std::map<std::string, std::string>& grads) {
  std::vector<std::string> sums;
  for (const std::string& var : variables) {
    auto g = grads.find(var);
    if (g == grads.end()) continue;
    OFL_ASSIGN_OR_RETURN(auto square, graph->AddOp("scalar_pow", {g->second}, {{"exponent", 2.0}},
                                                   "clip/square/" + var));
    OFL_ASSIGN_OR_RETURN(auto sum,
                         graph->AddOp("reduce_sum", {square[0]}, {}, "clip/sum_squares/" + var));
    sums.push_back(sum[0]);
  }
  OFL_ENSURE(!sums.empty(), "gradient clipping: no trainable variable has a gradient");
  OFL_ASSIGN_OR_RETURN(auto total, graph->AddOp("add_n", sums, {}, "clip/total"));
  OFL_ASSIGN_OR_RETURN(
      auto norm, graph->AddOp("scalar_pow", {total[0]}, {{"exponent", 0.5}}, "clip/global_norm"));
  CHECK_EQ(norm[0], kGlobalNormTensor);
  OFL_ASSIGN_OR_RETURN(
      auto factor, graph->AddOp("clip_factor", {norm[0]}, {{"max_norm", max_norm}}, "clip/factor"));
  std::map<std::string, std::string> clipped;
  for (const std::string& var : variables) {
    auto g = grads.find(var);
    if (g == grads.end()) continue;
    OFL_ASSIGN_OR_RETURN(auto scaled,
                         graph->AddOp("mul", {g->second, factor[0]}, {}, "clip/scale/" + var));
    clipped[var] = scaled[0];
  }
  return clipped;
}

// The dtype of the fed learning rate: float64 when an updated variable is
// float64, else float32. Each update casts it to its variable's dtype, as
// eager does with the attribute, so a float64 model gets an exact float64 lr
// (fed in float32 it would differ by about 1e-9 relative).
DataType FedLearningRateType(const OpGraph& graph, const std::vector<std::string>& variables,
                             const std::map<std::string, std::string>& grads) {
  for (const std::string& var : variables) {
    if (grads.count(var) > 0 && graph.variable(var).desc.dtype == DataType::kFloat64) {
      return DataType::kFloat64;
    }
  }
  return DataType::kFloat32;
}
}  // namespace

Status AppendOptimizer(OpGraph* graph, const OptimizerConf& conf,
                       const std::map<std::string, std::string>& grads) {
  OFL_RETURN_IF_ERROR(CheckConf(conf));
  // Variables in declaration order, so the plan is deterministic.
  const std::vector<std::string> variables = graph->variable_names();
  std::map<std::string, std::string> used = grads;
  if (conf.clip_grad_max_norm > 0) {
    OFL_ASSIGN_OR_RETURN(used, AppendClipping(graph, conf.clip_grad_max_norm, variables, grads));
  }
  std::vector<std::string> lr;  // the optional last input of every update
  if (!conf.lr_input.empty()) {
    OFL_RETURN_IF_ERROR(
        graph->AddInput(conf.lr_input, {Shape{}, FedLearningRateType(*graph, variables, used)}));
    lr.push_back(conf.lr_input);
  }
  auto with_lr = [&lr](std::vector<std::string> inputs) {
    inputs.insert(inputs.end(), lr.begin(), lr.end());
    return inputs;
  };
  for (const std::string& var : variables) {
    auto g = used.find(var);
    if (g == used.end()) continue;
    const TensorDesc desc = graph->variable(var).desc;
    // A lazy parameter (planning only) gets lazy state: no zeros allocated.
    const bool lazy = graph->variable(var).lazy;
    auto add_state = [&](const std::string& name, const TensorDesc& d) {
      return lazy ? graph->AddVariable(name, d, false)
                  : graph->AddVariable(name, Tensor::Zeros(d.shape, d.dtype), false);
    };
    if (conf.kind == "sgd") {
      OFL_RETURN_IF_ERROR(add_state(var + "/momentum", desc));
      OFL_RETURN_IF_ERROR(graph
                              ->AddOp("sgd_update", with_lr({var, g->second, var + "/momentum"}),
                                      {{"lr", conf.lr},
                                       {"momentum", conf.momentum},
                                       {"weight_decay", conf.weight_decay}},
                                      "update/" + var)
                              .status());
    } else {
      OFL_RETURN_IF_ERROR(add_state(var + "/m", desc));
      OFL_RETURN_IF_ERROR(add_state(var + "/v", desc));
      OFL_RETURN_IF_ERROR(add_state(var + "/step", {Shape{}, DataType::kInt64}));
      OFL_RETURN_IF_ERROR(
          graph
              ->AddOp("adam_update",
                      with_lr({var, g->second, var + "/m", var + "/v", var + "/step"}),
                      {{"lr", conf.lr},
                       {"beta1", conf.beta1},
                       {"beta2", conf.beta2},
                       {"eps", conf.eps},
                       {"weight_decay", conf.weight_decay},
                       {"decoupled_weight_decay", conf.kind == "adamw"}},
                      "update/" + var)
              .status());
    }
  }
  return Status::OK();
}

}  // namespace ofl
