// dropout(x) -> y, mask. Attrs rate=0.5 (0 <= rate < 1) and seed=0. mask has
// x's dtype: 1 / (1 - rate) where an element is kept, 0 where dropped; y =
// x * mask. An element is kept iff UniformFloat(seed, iteration, logical
// index) >= rate (oneflow_lite/core/random.h), where the logical index is the
// element's row-major index in the logical tensor, so every strategy and
// device count drops the same elements. Gradient: dx = mul(dy, mask); mask
// depends on no input and gets none. Kernel: dropout_cpu.cpp.
//
// SBP: x, y and mask split on the same axis (the kernel reads its shard's
// logical offset), or all B.
// FLOPs per element: 2 (compare, *mask); the Philox integer work is not counted.
#include "ops/grad.h"
#include "ops/nn/common.h"
#include "ops/op_registry.h"

namespace ofl {

namespace {

Maybe<std::vector<TensorDesc>> InferDropout(const OpContext& ctx) {
  OFL_RETURN_IF_ERROR(nn::EnsureComputeFloat(ctx, "x", ctx.input(0)));
  const double rate = ctx.attrs.Get<double>("rate");
  OFL_ENSURE(rate >= 0 && rate < 1, ctx.where(), ": rate=", rate, " must be in [0, 1)");
  return std::vector<TensorDesc>{ctx.input(0), ctx.input(0)};
}

std::vector<SbpSignature> DropoutSignatures(const OpContext& ctx) {
  std::vector<SbpSignature> sigs;
  for (int64_t a = 0; a < ctx.input(0).shape.ndim(); ++a) {
    sigs.push_back({{Sbp::Split(a)}, {Sbp::Split(a), Sbp::Split(a)}});
  }
  sigs.push_back({{Sbp::Broadcast()}, {Sbp::Broadcast(), Sbp::Broadcast()}});
  return sigs;
}

Status DropoutGrad(GradContext& g) {
  if (!g.NeedsInputGrad(0) || g.OutputGrad(0).empty()) return Status::OK();
  OFL_ASSIGN_OR_RETURN(std::string dx, g.Emit1("mul", {g.OutputGrad(0), g.Output(1)}));
  g.SetInputGrad(0, dx);
  return Status::OK();
}

}  // namespace

OFL_REGISTER_OP("dropout")
    .Input("x")
    .Output("y")
    .Output("mask")
    .Attr("rate", AttrValue(0.5))
    .Attr("seed", 0)
    .InferShape(InferDropout)
    .Sbp(DropoutSignatures)
    .Cost(nn::PerElementCost(2))
    .Grad(DropoutGrad)
    .Doc(
        "Zeroes each element with probability `rate` and scales the rest by 1 / (1 - rate); "
        "the draw depends only on (seed, iteration, logical index).");

}  // namespace ofl
