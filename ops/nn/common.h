// Checks, SBP and cost helpers shared by the neural-network ops of ops/nn/
// (activations, softmax, cross entropy, layer norm, dropout, embedding).
// Every check returns an InvalidArgument that starts with ctx.where() and
// names the argument and its value. Header-only pure functions; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "oneflow_lite/core/checked_math.h"
#include "ops/op_registry.h"

namespace ofl::nn {

// `name`.dtype is float32 or float64 (the types with CPU kernels).
inline Status EnsureComputeFloat(const OpContext& ctx, const std::string& name,
                                 const TensorDesc& d) {
  OFL_ENSURE(IsComputeFloat(d.dtype), ctx.where(), ": ", name, ".dtype=", DataTypeName(d.dtype),
             " is not float32 or float64");
  return Status::OK();
}

// `name`.dtype is int32 or int64 (labels, ids).
inline Status EnsureIndexType(const OpContext& ctx, const std::string& name, const TensorDesc& d) {
  OFL_ENSURE(d.dtype == DataType::kInt32 || d.dtype == DataType::kInt64, ctx.where(), ": ", name,
             ".dtype=", DataTypeName(d.dtype), " is not int32 or int64");
  return Status::OK();
}

// `name`.shape == `want` (a shape derived from another argument, described by `want_name`).
inline Status EnsureShape(const OpContext& ctx, const std::string& name, const TensorDesc& d,
                          const std::string& want_name, const Shape& want) {
  OFL_ENSURE(d.shape == want, ctx.where(), ": ", name, ".shape=", d.shape, " != ", want_name, "=",
             want);
  return Status::OK();
}

// `name` has the dtype of `ref_name`.
inline Status EnsureSameDtype(const OpContext& ctx, const std::string& name, const TensorDesc& d,
                              const std::string& ref_name, const TensorDesc& ref) {
  OFL_ENSURE(d.dtype == ref.dtype, ctx.where(), ": ", name, ".dtype=", DataTypeName(d.dtype),
             " != ", ref_name, ".dtype=", DataTypeName(ref.dtype));
  return Status::OK();
}

// `name` has the shape and dtype of `ref_name`.
inline Status EnsureSameDesc(const OpContext& ctx, const std::string& name, const TensorDesc& d,
                             const std::string& ref_name, const TensorDesc& ref) {
  OFL_RETURN_IF_ERROR(EnsureShape(ctx, name, d, ref_name + ".shape", ref.shape));
  return EnsureSameDtype(ctx, name, d, ref_name, ref);
}

// Maps attribute `attr`=value into [0, ndim) of `name`.shape, or says why not.
inline Maybe<int64_t> NormalizeAxisAttr(const OpContext& ctx, const std::string& attr,
                                        const std::string& name, const Shape& shape) {
  const int64_t value = ctx.attrs.Get<int64_t>(attr);
  const int64_t ndim = shape.ndim();
  OFL_ENSURE(ndim > 0 && value >= -ndim && value < ndim, ctx.where(), ": ", attr, "=", value,
             " is out of range for ", name, ".shape=", shape, " (", ndim, " dims)");
  return value < 0 ? value + ndim : value;
}

// Shape of axes [begin, end) of `shape`.
inline Shape SubShape(const Shape& shape, int64_t begin, int64_t end) {
  return Shape(std::vector<int64_t>(shape.dims().begin() + begin, shape.dims().begin() + end));
}

// FLOPs = `per_element` x elements of output 0; memory = bytes of every output.
inline CostFn PerElementCost(double per_element) {
  return [per_element](const OpContext&, const std::vector<TensorDesc>& outs) {
    OpCost cost;
    cost.flops = per_element * static_cast<double>(outs.at(0).shape.NumElements());
    for (const TensorDesc& d : outs) {
      cost.memory_bytes = SaturatingAdd(cost.memory_bytes, d.nbytes());
    }
    return cost;
  };
}

// `base` plus one signature for an op linear in its last input (a backward op
// in dy): B for every other input, P for the last -> P for every output.
inline SbpFn WithLinearLastInput(SbpFn base, int num_outputs) {
  return [base, num_outputs](const OpContext& ctx) {
    std::vector<SbpSignature> sigs = base(ctx);
    std::vector<Sbp> ins(ctx.num_inputs(), Sbp::Broadcast());
    ins.back() = Sbp::PartialSum();
    sigs.push_back({ins, std::vector<Sbp>(num_outputs, Sbp::PartialSum())});
    return sigs;
  };
}

}  // namespace ofl::nn
