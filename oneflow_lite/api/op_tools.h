// Op tools: run one registered op on whole tensors, forward or backward,
// and read its cost estimate. The op test table and the Python binding use
// them; each call builds a one-op graph and runs it on one CPU device.
// Thread-compatible: separate calls share nothing.
#pragma once

#include <string>
#include <vector>

#include "ops/op_registry.h"
#include "oneflow_lite/core/tensor.h"

namespace ofl {

Maybe<std::vector<Tensor>> RunOp(const std::string& op_type, const std::vector<Tensor>& inputs,
                                 const AttrMap& attrs);

// Gradients of sum(outputs[i] * output_grads[i]) with respect to each
// floating input; an undefined Tensor where no gradient exists. An
// undefined output_grads[i] means no gradient flows into output i.
Maybe<std::vector<Tensor>> RunOpGrad(const std::string& op_type, const std::vector<Tensor>& inputs,
                                     const AttrMap& attrs, const std::vector<Tensor>& output_grads);

struct OpInfo {
  std::vector<TensorDesc> outputs;
  OpCost cost;
  std::vector<SbpSignature> signatures;
};
Maybe<OpInfo> InspectOp(const std::string& op_type, const std::vector<TensorDesc>& inputs,
                        const AttrMap& attrs);

}  // namespace ofl
