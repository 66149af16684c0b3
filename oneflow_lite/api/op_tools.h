// Op tools: run one registered op on whole tensors, forward or backward,
// and read its cost estimate; or run an op's CPU kernel alone on one rank's
// local tensors (RunKernel, for the SBP-rule check). The op test table and
// the Python binding use them. RunOp and RunOpGrad are one uncached call of
// eager mode's light path (api/eager.h: the kernel called directly, no
// graph, no Plan, no runtime; the eager frontend keeps an EagerExecutor so
// that its repeated calls skip inference); kernel threads are whatever the
// process's pools are bounded to (ops/parallel.h). OpTypes and DescribeOp
// read the op registry for the binding (python/ reaches ops/ only through
// here). Thread-compatible: separate calls share nothing.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "oneflow_lite/core/tensor.h"
#include "ops/cpu_isa.h"
#include "ops/nd_sbp.h"
#include "ops/op_registry.h"

namespace ofl {

// Every registered op type, sorted.
std::vector<std::string> OpTypes();

// The CPU instruction set the kernels run (ops/cpu_isa.h's CpuIsaInfo with
// the levels named: "avx512", "avx2", "scalar"), decided on first use.
struct KernelIsa {
  std::string active, detected, requested, onednn_requested, onednn_cap, note;
};
KernelIsa KernelCpuIsa();
// InvalidArgument naming the variable when OFL_CPU_ISA or ONEDNN_MAX_CPU_ISA
// holds an unknown value (the binding checks it when it loads).
Status CheckKernelCpuIsaRequest();

// What the registry knows of an op type: its inputs, outputs, attributes
// (name -> default as text; std::nullopt for a required one), doc, whether it
// has a gradient, and the inputs its kernel writes in place. Errors: an
// unknown op type, named.
struct OpSchema {
  std::string type;
  std::vector<std::string> inputs;
  bool variadic_input = false;
  std::vector<std::string> outputs;
  std::map<std::string, std::optional<std::string>> attrs;
  std::string doc;
  bool has_grad = false;
  std::vector<int> mutable_inputs;
};
Maybe<OpSchema> DescribeOp(const std::string& op_type);

Maybe<std::vector<Tensor>> RunOp(const std::string& op_type, const std::vector<Tensor>& inputs,
                                 const AttrMap& attrs);

// Gradients of sum(outputs[i] * output_grads[i]) with respect to each
// floating input; an undefined Tensor where no gradient exists. An
// undefined output_grads[i] means no gradient flows into output i.
Maybe<std::vector<Tensor>> RunOpGrad(const std::string& op_type, const std::vector<Tensor>& inputs,
                                     const AttrMap& attrs, const std::vector<Tensor>& output_grads);

// Runs op_type's CPU kernel once on `inputs`, the local tensors of one rank,
// as the runtime would: attributes are validated and completed with their
// defaults (OpDef::CompleteAttrs), outputs are allocated with the given
// shapes and dtypes, and the kernel is called directly. Without
// logical_shape/offset the outputs are whole tensors and must be what
// inference gives for the inputs. With them the call is one rank's shard,
// whose shapes need not satisfy the logical op's attributes: keeping inputs
// and outputs consistent is then the caller's job (a kernel CHECKs what it
// relies on); dtypes are still checked when the local inputs infer. A value
// the kernel rejects is an error (CallKernel). Outputs start as NaN (floats) or -999999 (integers),
// so an element the kernel never writes shows. Mutable inputs are copied,
// written in place and returned after the outputs, as RunOp does; the
// caller's tensors are left alone. logical_shape and logical_offset describe
// output 0 in the logical tensor (random ops read them); by default output 0
// is the whole tensor (its shape, offset zero). `iteration` is the training
// step random ops use as their stream. input_places, when given, holds one
// (logical shape, offset) per input: where each local input lies in its
// logical tensor (the vocabulary-split embedding reads its weight's); by
// default every input is whole.
struct LogicalPlace {
  Shape shape;
  std::vector<int64_t> offset;
};
Maybe<std::vector<Tensor>> RunKernel(
    const std::string& op_type, const std::vector<Tensor>& inputs, const AttrMap& attrs,
    const std::vector<TensorDesc>& outputs,
    const std::optional<Shape>& logical_shape = std::nullopt,
    const std::optional<std::vector<int64_t>>& logical_offset = std::nullopt, int64_t iteration = 0,
    const std::vector<LogicalPlace>& input_places = {});

struct OpInfo {
  std::vector<TensorDesc> outputs;
  OpCost cost;
  std::vector<SbpSignature> signatures;
};
Maybe<OpInfo> InspectOp(const std::string& op_type, const std::vector<TensorDesc>& inputs,
                        const AttrMap& attrs);

// The op's N-D SBP signatures on the mesh `hierarchy` (axis sizes, outer
// first; a list of ones when only the axis count is known), for logical
// inputs `inputs` (validated as InspectOp does); see ops/nd_sbp.h for the
// order. `known_sizes` false leaves OpContext::hierarchy empty (no
// divisibility-dependent signatures).
Maybe<std::vector<NdSbpSignature>> InspectNdSbp(const std::string& op_type,
                                                const std::vector<TensorDesc>& inputs,
                                                const AttrMap& attrs,
                                                const std::vector<int64_t>& hierarchy,
                                                bool known_sizes);

}  // namespace ofl
