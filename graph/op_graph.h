// OpGraph: the logical graph in the global view (DESIGN.md section 1). It
// holds fed inputs, variables (with their initial values), and ops in the
// order they were added, which is always a valid execution order. Every
// AddOp is validated by the op registry, so a graph never holds an op whose
// shapes do not infer; a failed AddOp changes nothing. Tensor names are
// "<op name>/<output arg>_<i>" for op outputs. Not synchronised.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "oneflow_lite/core/proto/job.pb.h"
#include "oneflow_lite/core/tensor.h"
#include "ops/op_registry.h"

namespace ofl {

struct OpNode {
  std::string name;
  std::string type;
  std::vector<std::string> inputs;
  std::vector<std::string> outputs;
  AttrMap attrs;  // complete: defaults filled in
};

struct VariableInfo {
  TensorDesc desc;
  bool trainable = true;
  Tensor init;        // initial value (empty when lazy)
  bool lazy = false;  // declared by its desc only: no initial value
};

class OpGraph {
 public:
  // A tensor fed on every run.
  Status AddInput(const std::string& name, const TensorDesc& desc);
  // A tensor that persists across runs, starting at `init`.
  Status AddVariable(const std::string& name, const Tensor& init, bool trainable);
  // A lazy variable: its desc only, no initial value (plan-only use, e.g.
  // costing a model too large to hold). Whatever later needs the value
  // (InitialValue, sessions) reports an error naming it.
  Status AddVariable(const std::string& name, const TensorDesc& desc, bool trainable);
  // The variable's initial value; an error naming it when it is lazy or unknown.
  Maybe<Tensor> InitialValue(const std::string& name) const;
  // Adds an op; returns its output tensor names. `name` may be empty: a
  // unique one is made from the op type.
  Maybe<std::vector<std::string>> AddOp(const std::string& type,
                                        const std::vector<std::string>& inputs,
                                        const AttrMap& attrs, const std::string& name = "");

  bool HasTensor(const std::string& name) const { return descs_.count(name) > 0; }
  Maybe<TensorDesc> Desc(const std::string& name) const;
  const std::vector<OpNode>& ops() const { return ops_; }
  const std::vector<std::string>& input_names() const { return input_order_; }
  const std::vector<std::string>& variable_names() const { return variable_order_; }
  const VariableInfo& variable(const std::string& name) const { return variables_.at(name); }
  bool IsVariable(const std::string& name) const { return variables_.count(name) > 0; }
  bool IsInput(const std::string& name) const { return inputs_.count(name) > 0; }
  // The forward context of an op (for SBP, cost and grad rules).
  OpContext ContextOf(const OpNode& node) const;

  const std::string& loss() const { return loss_; }
  Status SetLoss(const std::string& name);

  proto::Job ToJob() const;
  // Rebuilds the graph from a Job, checking it as AddInput/AddOp do. A Job
  // holds no values: its variables come back lazy (desc only), so a Job
  // naming a huge variable allocates nothing (fuzz/fuzz_job.cpp).
  static Maybe<OpGraph> FromJob(const proto::Job& job);
  std::string ToString() const;

 private:
  Status CheckNewName(const std::string& name) const;
  std::string UniqueOpName(const std::string& type);

  std::map<std::string, TensorDesc> descs_;
  std::map<std::string, TensorDesc> inputs_;
  std::vector<std::string> input_order_;
  std::map<std::string, VariableInfo> variables_;
  std::vector<std::string> variable_order_;
  std::vector<OpNode> ops_;
  std::set<std::string> op_names_;
  std::map<std::string, int> name_counters_;
  std::string loss_;
};

proto::TensorDescProto DescToProto(const TensorDesc& desc);
Maybe<TensorDesc> DescFromProto(const proto::TensorDescProto& p);

}  // namespace ofl
