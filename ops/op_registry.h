// The op registry (DESIGN.md section 4): one OpDef per op holds its
// arguments, attributes with defaults, shape and dtype inference, 1-D SBP
// signatures, FLOP and memory estimate and backward rule. Kernels are
// registered per device in kernel.h. Ops register during static
// initialisation (OFL_REGISTER_OP); afterwards the registry is read-only and
// safe to read from any thread. ops/ is linked whole so none are dropped.
//
//   OFL_REGISTER_OP("add_n")  // ops/array/fill.cpp
//       .InputList("inputs").Output("out")
//       .InferShape(InferAddN).Sbp(AddNSbp()).Cost(AddNCost).Grad(AddNGrad);
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "oneflow_lite/core/attr.h"
#include "oneflow_lite/core/data_type.h"
#include "oneflow_lite/core/sbp.h"
#include "oneflow_lite/core/shape.h"

namespace ofl {

class GradContext;

struct TensorDesc {
  Shape shape;
  DataType dtype = DataType::kFloat32;
  // CHECKs that it fits int64: descs are validated (CheckShape) on entry.
  int64_t nbytes() const;
  bool operator==(const TensorDesc& o) const { return shape == o.shape && dtype == o.dtype; }
};

// What inference, SBP and cost functions see of one op instance.
struct OpContext {
  std::string op_type;
  std::string op_name;             // the instance's name in its graph
  std::vector<TensorDesc> inputs;  // in argument order
  AttrMap attrs;                   // complete: defaults filled in
  // The mesh (outer axis first) the SBP signatures are asked for; empty when
  // unknown. Signatures whose soundness depends on divisibility (reshape's
  // merge and split of a split axis) are offered only when it is known.
  std::vector<int64_t> hierarchy;
  // "matmul" or "matmul 'fc1'": the prefix of every error message.
  std::string where() const {
    return op_name.empty() || op_name == op_type ? op_type : op_type + " '" + op_name + "'";
  }
  const TensorDesc& input(int i) const { return inputs.at(i); }
  int num_inputs() const { return static_cast<int>(inputs.size()); }
};

// One 1-D SBP signature: an Sbp per input and per output, valid together.
struct SbpSignature {
  std::vector<Sbp> inputs;
  std::vector<Sbp> outputs;
  std::string ToString() const;  // "S(0), B -> S(0)"
  bool operator==(const SbpSignature& o) const {
    return inputs == o.inputs && outputs == o.outputs;
  }
};

// The op's estimate for the cost model. memory_bytes: bytes of the outputs
// the op allocates plus any workspace it keeps alive (saturating at
// INT64_MAX rather than wrapping).
struct OpCost {
  double flops = 0;
  int64_t memory_bytes = 0;
};

using InferFn = std::function<Maybe<std::vector<TensorDesc>>(const OpContext&)>;
using SbpFn = std::function<std::vector<SbpSignature>(const OpContext&)>;
using CostFn = std::function<OpCost(const OpContext&, const std::vector<TensorDesc>& outputs)>;
using GradFn = std::function<Status(GradContext&)>;
// Whether one N-D combination of the op's 1-D signatures (an NdSbp per input
// and output, on ctx.hierarchy) is sound; for signatures whose soundness
// depends on which mesh axes split together (see OpContext::hierarchy).
using NdSbpFilterFn = std::function<bool(const OpContext&, const std::vector<NdSbp>& inputs,
                                         const std::vector<NdSbp>& outputs)>;

class OpDef {
 public:
  explicit OpDef(std::string type) : type_(std::move(type)) {}

  OpDef& Input(const std::string& name);
  // One or more tensors under one name; must be the only input argument.
  OpDef& InputList(const std::string& name);
  // A trailing input the caller may leave out (after every Input; e.g. the
  // updates' fed "lr"). Kernels see how many were given.
  OpDef& OptionalInput(const std::string& name);
  // Written in place by the kernel (parameters and optimizer state).
  OpDef& MutableInput(const std::string& name);
  OpDef& Output(const std::string& name);
  // An optional attribute and its default; the default's type is the attr's type.
  OpDef& Attr(const std::string& name, AttrValue default_value);
  OpDef& Attr(const std::string& name, bool value) { return Attr(name, AttrValue(value)); }
  OpDef& Attr(const std::string& name, int value) { return Attr(name, AttrValue(int64_t{value})); }
  OpDef& Attr(const std::string& name, double value) { return Attr(name, AttrValue(value)); }
  OpDef& Attr(const std::string& name, const char* value) {
    return Attr(name, AttrValue(std::string(value)));
  }
  // An attribute the caller must give; `example` fixes its type.
  OpDef& RequiredAttr(const std::string& name, AttrValue example);
  OpDef& InferShape(InferFn fn);
  OpDef& Sbp(SbpFn fn);
  // Drops unsound N-D combinations when the mesh is known (ops/nd_sbp.h).
  OpDef& NdSbpFilter(NdSbpFilterFn fn);
  OpDef& Cost(CostFn fn);
  OpDef& Grad(GradFn fn);
  OpDef& Doc(const std::string& doc);

  const std::string& type() const { return type_; }
  const std::vector<std::string>& input_names() const { return input_names_; }
  const std::vector<std::string>& output_names() const { return output_names_; }
  bool variadic_input() const { return variadic_input_; }
  // Inputs a caller must give: all but the trailing OptionalInputs.
  int num_required_inputs() const { return num_required_inputs_; }
  bool is_mutable_input(int i) const;
  const std::map<std::string, AttrValue>& attr_defaults() const { return attr_defaults_; }
  const std::map<std::string, bool>& attr_required() const { return attr_required_; }
  const std::string& doc() const { return doc_; }
  bool has_grad() const { return static_cast<bool>(grad_); }

  // Validates arity, attribute names and types (ints are promoted to
  // floats) and fills defaults into ctx->attrs. Errors name the op and the
  // offending value.
  Status CompleteAttrs(OpContext* ctx) const;
  // CompleteAttrs, then shape inference.
  Maybe<std::vector<TensorDesc>> Infer(OpContext* ctx) const;
  std::vector<SbpSignature> SbpSignatures(const OpContext& ctx) const;
  // True without a filter or without a known mesh.
  bool AcceptsNdSbp(const OpContext& ctx, const std::vector<NdSbp>& inputs,
                    const std::vector<NdSbp>& outputs) const;
  OpCost EstimateCost(const OpContext& ctx, const std::vector<TensorDesc>& outputs) const;
  const GradFn& grad() const { return grad_; }

 private:
  std::string type_;
  std::vector<std::string> input_names_;
  std::vector<bool> input_mutable_;
  bool variadic_input_ = false;
  int num_required_inputs_ = 0;
  std::vector<std::string> output_names_;
  std::map<std::string, AttrValue> attr_defaults_;
  std::map<std::string, bool> attr_required_;
  InferFn infer_;
  SbpFn sbp_;
  NdSbpFilterFn nd_sbp_filter_;
  CostFn cost_;
  GradFn grad_;
  std::string doc_;
};

class OpRegistry {
 public:
  static OpDef& Register(const std::string& type);  // static-initialisation time only
  static Maybe<const OpDef*> Find(const std::string& type);
  static std::vector<std::string> ListOps();
};

// Argument names for messages: "a.shape[-1]".
std::string ArgName(const OpDef& def, int input_index);

}  // namespace ofl

#define OFL_REGISTER_OP(type)                                          \
  static ::ofl::OpDef& OFL_CONCAT(ofl_op_registration_, __COUNTER__) = \
      ::ofl::OpRegistry::Register(type)
