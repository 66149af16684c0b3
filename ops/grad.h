// GradContext: what an op's backward rule sees (DESIGN.md section 4). The
// rule reads the forward op's tensors by name, emits other registered ops
// through Emit() and declares each input's gradient. graph/ implements it
// over an OpGraph; ops/ knows no graph. Used by one thread at a time.
#pragma once

#include <string>
#include <vector>

#include "ops/op_registry.h"

namespace ofl {

class GradContext {
 public:
  virtual ~GradContext() = default;

  virtual const OpContext& forward() const = 0;  // type, name, input descs, attrs
  const AttrMap& attrs() const { return forward().attrs; }
  int num_inputs() const { return forward().num_inputs(); }
  virtual int num_outputs() const = 0;

  virtual const std::string& Input(int i) const = 0;  // tensor names of the forward op
  virtual const std::string& Output(int i) const = 0;
  virtual const TensorDesc& OutputDesc(int i) const = 0;
  const TensorDesc& InputDesc(int i) const { return forward().input(i); }
  // The gradient of output i, or "" when none flows back into it.
  virtual std::string OutputGrad(int i) const = 0;
  // Whether the gradient of input i is wanted (it leads to a trainable variable).
  virtual bool NeedsInputGrad(int i) const = 0;

  // Adds an op after the forward graph; returns its output tensor names.
  virtual Maybe<std::vector<std::string>> Emit(const std::string& op_type,
                                               const std::vector<std::string>& inputs,
                                               const AttrMap& attrs = {}) = 0;
  // Emit for single-output ops.
  Maybe<std::string> Emit1(const std::string& op_type, const std::vector<std::string>& inputs,
                           const AttrMap& attrs = {});
  virtual void SetInputGrad(int i, const std::string& grad) = 0;
};

}  // namespace ofl
