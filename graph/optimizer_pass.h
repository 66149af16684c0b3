// The optimizer pass: appends one update op per trainable variable after the
// backward, creating its state variables (momentum, Adam moments and step)
// as non-trainable variables named "<param>/<state>". Not synchronised.
#pragma once

#include <map>
#include <string>

#include "graph/op_graph.h"

namespace ofl {

struct OptimizerConf {
  std::string kind = "sgd";  // "sgd", "adam" or "adamw"
  double lr = 0.01;
  double momentum = 0.0;     // sgd
  double weight_decay = 0.0;
  double beta1 = 0.9;        // adam, adamw
  double beta2 = 0.999;
  double eps = 1e-8;
};

// `grads` maps each trainable variable to its gradient tensor.
Status AppendOptimizer(OpGraph* graph, const OptimizerConf& conf,
                       const std::map<std::string, std::string>& grads);

}  // namespace ofl
