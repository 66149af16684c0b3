// The optimizer pass: appends one update op per trainable variable after the
// backward, creating its state variables (momentum, Adam moments and step)
// as non-trainable variables named "<param>/<state>". Optionally first clips
// the gradients to a global L2 norm (ops named "clip/..."; the norm is the
// tensor kGlobalNormTensor), and feeds the learning rate as a scalar input
// so a schedule can change it every step. Not synchronised.
#pragma once

#include <map>
#include <string>

#include "graph/op_graph.h"

namespace ofl {

struct OptimizerConf {
  std::string kind = "sgd";  // "sgd", "adam" or "adamw"
  double lr = 0.01;
  double momentum = 0.0;  // sgd
  double weight_decay = 0.0;
  double beta1 = 0.9;  // adam, adamw
  double beta2 = 0.999;
  double eps = 1e-8;
  // > 0: scale every gradient by min(1, max_norm / (global L2 norm + 1e-6))
  // before the updates (PyTorch's clip_grad_norm_).
  double clip_grad_max_norm = 0.0;
  // Non-empty: a fed scalar input of this name is every update's learning
  // rate (the "lr" field is then only its documented start value). It is
  // float64 when an updated variable is float64, else float32; each update
  // casts it to its variable's dtype.
  std::string lr_input;
};

// The global gradient norm's tensor when the pass clips.
inline constexpr const char* kGlobalNormTensor = "clip/global_norm/out_0";

// `grads` maps each trainable variable to its gradient tensor.
Status AppendOptimizer(OpGraph* graph, const OptimizerConf& conf,
                       const std::map<std::string, std::string>& grads);

}  // namespace ofl
