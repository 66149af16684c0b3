// clip_factor: the scale global-norm gradient clipping applies to every
// gradient, min(1, max_norm / (norm + 1e-6)) as PyTorch's clip_grad_norm_.
// graph/optimizer_pass.cpp emits it after the global norm (a broadcast
// scalar) when the optimizer clips; the kernel is in clip_grad_cpu.cpp.
#include "ops/op_registry.h"
#include "ops/sbp_rules.h"

namespace ofl {

namespace {

Maybe<std::vector<TensorDesc>> InferClipFactor(const OpContext& ctx) {
  const TensorDesc& norm = ctx.input(0);
  OFL_ENSURE(IsComputeFloat(norm.dtype), ctx.where(), ": norm.dtype=", DataTypeName(norm.dtype),
             " is not float32 or float64");
  OFL_ENSURE(norm.shape.NumElements() == 1, ctx.where(), ": norm must be a scalar, got shape ",
             norm.shape);
  const double max_norm = ctx.attrs.Get<double>("max_norm");
  OFL_ENSURE(max_norm > 0, ctx.where(), ": max_norm=", max_norm, " must be positive");
  return std::vector<TensorDesc>{norm};
}

}  // namespace

OFL_REGISTER_OP("clip_factor")
    .Input("norm")
    .Output("out")
    .RequiredAttr("max_norm", 1.0)
    .InferShape(InferClipFactor)
    .Sbp(Elementwise(PartialRule::kNone))  // nonlinear: the norm must be whole
    // add, divide, min: three flops on one element.
    .Cost([](const OpContext&, const std::vector<TensorDesc>& outs) {
      return OpCost{3, outs[0].nbytes()};
    })
    .Doc("min(1, max_norm / (norm + 1e-6)): the gradient scale of global-norm clipping.");

}  // namespace ofl
