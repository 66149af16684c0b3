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
  return Status::OK();
}
}  // namespace

Status AppendOptimizer(OpGraph* graph, const OptimizerConf& conf,
                       const std::map<std::string, std::string>& grads) {
  OFL_RETURN_IF_ERROR(CheckConf(conf));
  // Variables in declaration order, so the plan is deterministic.
  const std::vector<std::string> variables = graph->variable_names();
  for (const std::string& var : variables) {
    auto g = grads.find(var);
    if (g == grads.end()) continue;
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
                              ->AddOp("sgd_update", {var, g->second, var + "/momentum"},
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
              ->AddOp("adam_update", {var, g->second, var + "/m", var + "/v", var + "/step"},
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
