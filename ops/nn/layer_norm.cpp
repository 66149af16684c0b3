// layer_norm(x, gamma, beta) -> y, mean, inv_std. Attrs begin_norm_axis=-1
// (normalise over axes [begin_norm_axis, ndim)) and epsilon=1e-5. gamma and
// beta have shape x.shape[begin_norm_axis:]; mean and inv_std have shape
// x.shape[:begin_norm_axis]. inv_std = 1 / sqrt(var + epsilon) with the
// biased variance, as PyTorch. Backward op layer_norm_grad(x, gamma, mean,
// inv_std, dy) -> dx, dgamma, dbeta. Only y is differentiable: a gradient
// flowing into mean or inv_std is an Unimplemented error. Kernels:
// layer_norm_cpu.cpp.
//
// SBP: x, y, mean, inv_std split on one axis before begin_norm_axis with
// gamma, beta B; or all B. layer_norm_grad: the same split gives dgamma and
// dbeta as P; it is also linear in dy ((B, B, B, B, P) -> (P, P, P)).
// FLOPs per element of x (per-row rsqrt left out):
//   layer_norm 7 (sum, x-mean, square, sum, *inv_std, *gamma, +beta)
//   layer_norm_grad 13 (xhat: 2, dy*gamma 1, sum 1, sum of *xhat 2,
//                       dx: 4 (-, xhat*, -, *inv_std), dgamma: 2, dbeta: 1)
#include "oneflow_lite/core/checked_math.h"
#include "ops/grad.h"
#include "ops/nn/common.h"
#include "ops/op_registry.h"

namespace ofl {

namespace {

// Checks x and the parameters at input indices `params` (1 gamma, 2 beta);
// returns begin_norm_axis in [0, ndim).
Maybe<int64_t> CheckNormalised(const OpContext& ctx, const std::vector<int>& params) {
  const TensorDesc& x = ctx.input(0);
  OFL_RETURN_IF_ERROR(nn::EnsureComputeFloat(ctx, "x", x));
  OFL_ASSIGN_OR_RETURN(int64_t begin, nn::NormalizeAxisAttr(ctx, "begin_norm_axis", "x", x.shape));
  const Shape normalised = nn::SubShape(x.shape, begin, x.shape.ndim());
  for (int i : params) {
    const std::string name = i == 1 ? "gamma" : "beta";
    OFL_RETURN_IF_ERROR(
        nn::EnsureShape(ctx, name, ctx.input(i), "x.shape[begin_norm_axis:]", normalised));
    OFL_RETURN_IF_ERROR(nn::EnsureSameDtype(ctx, name, ctx.input(i), "x", x));
  }
  OFL_ENSURE(normalised.NumElements() > 0, ctx.where(), ": x.shape[begin_norm_axis:]=", normalised,
             " has no elements to normalise");
  return begin;
}

Maybe<std::vector<TensorDesc>> InferLayerNorm(const OpContext& ctx) {
  OFL_ASSIGN_OR_RETURN(int64_t begin, CheckNormalised(ctx, {1, 2}));
  const double epsilon = ctx.attrs.Get<double>("epsilon");
  OFL_ENSURE(epsilon > 0, ctx.where(), ": epsilon=", epsilon, " must be > 0");
  const TensorDesc& x = ctx.input(0);
  TensorDesc stats{nn::SubShape(x.shape, 0, begin), x.dtype};
  return std::vector<TensorDesc>{x, stats, stats};
}

Maybe<std::vector<TensorDesc>> InferLayerNormGrad(const OpContext& ctx) {
  OFL_ASSIGN_OR_RETURN(int64_t begin, CheckNormalised(ctx, {1}));
  const TensorDesc& x = ctx.input(0);
  TensorDesc stats{nn::SubShape(x.shape, 0, begin), x.dtype};
  for (int i : {2, 3}) {
    const std::string name = i == 2 ? "mean" : "inv_std";
    OFL_RETURN_IF_ERROR(
        nn::EnsureShape(ctx, name, ctx.input(i), "x.shape[:begin_norm_axis]", stats.shape));
    OFL_RETURN_IF_ERROR(nn::EnsureSameDtype(ctx, name, ctx.input(i), "x", x));
  }
  OFL_RETURN_IF_ERROR(nn::EnsureSameDesc(ctx, "dy", ctx.input(4), "x", x));
  return std::vector<TensorDesc>{x, ctx.input(1), ctx.input(1)};
}

int64_t BeginNormAxis(const OpContext& ctx) {
  int64_t begin = ctx.attrs.Get<int64_t>("begin_norm_axis");
  return begin < 0 ? begin + ctx.input(0).shape.ndim() : begin;
}

std::vector<SbpSignature> LayerNormSignatures(const OpContext& ctx) {
  const Sbp b = Sbp::Broadcast();
  std::vector<SbpSignature> sigs;
  for (int64_t a = 0; a < BeginNormAxis(ctx); ++a) {
    const Sbp s = Sbp::Split(a);
    sigs.push_back({{s, b, b}, {s, s, s}});
  }
  sigs.push_back({{b, b, b}, {b, b, b}});
  return sigs;
}

std::vector<SbpSignature> LayerNormGradSignatures(const OpContext& ctx) {
  const Sbp b = Sbp::Broadcast();
  const Sbp p = Sbp::PartialSum();
  std::vector<SbpSignature> sigs;
  for (int64_t a = 0; a < BeginNormAxis(ctx); ++a) {
    const Sbp s = Sbp::Split(a);
    sigs.push_back({{s, b, s, s, s}, {s, p, p}});
  }
  sigs.push_back({{b, b, b, b, b}, {b, b, b}});
  sigs.push_back({{b, b, b, b, p}, {p, p, p}});
  return sigs;
}

OpCost LayerNormCost(const OpContext& ctx, const std::vector<TensorDesc>& outs,
                     double per_element) {
  OpCost cost;
  cost.flops = per_element * static_cast<double>(ctx.input(0).shape.NumElements());
  for (const TensorDesc& d : outs) cost.memory_bytes = SaturatingAdd(cost.memory_bytes, d.nbytes());
  return cost;
}

Status LayerNormGrad(GradContext& g) {
  OFL_ENSURE(g.OutputGrad(1).empty() && g.OutputGrad(2).empty(), g.forward().where(),
             ": gradients through the mean and inv_std outputs are not supported");
  if (g.OutputGrad(0).empty()) return Status::OK();
  if (!g.NeedsInputGrad(0) && !g.NeedsInputGrad(1) && !g.NeedsInputGrad(2)) return Status::OK();
  AttrMap attrs{{"begin_norm_axis", g.attrs().Get<int64_t>("begin_norm_axis")}};
  OFL_ASSIGN_OR_RETURN(
      std::vector<std::string> grads,
      g.Emit("layer_norm_grad", {g.Input(0), g.Input(1), g.Output(1), g.Output(2), g.OutputGrad(0)},
             attrs));
  for (int i = 0; i < 3; ++i) {
    if (g.NeedsInputGrad(i)) g.SetInputGrad(i, grads[i]);
  }
  return Status::OK();
}

}  // namespace

OFL_REGISTER_OP("layer_norm")
    .Input("x")
    .Input("gamma")
    .Input("beta")
    .Output("y")
    .Output("mean")
    .Output("inv_std")
    .Attr("begin_norm_axis", -1)
    .Attr("epsilon", AttrValue(1e-5))
    .InferShape(InferLayerNorm)
    .Sbp(LayerNormSignatures)
    .Cost([](const OpContext& ctx, const std::vector<TensorDesc>& outs) {
      return LayerNormCost(ctx, outs, 7);
    })
    .Grad(LayerNormGrad)
    .Doc("(x - mean) * inv_std * gamma + beta over axes [begin_norm_axis, ndim).");

OFL_REGISTER_OP("layer_norm_grad")
    .Input("x")
    .Input("gamma")
    .Input("mean")
    .Input("inv_std")
    .Input("dy")
    .Output("dx")
    .Output("dgamma")
    .Output("dbeta")
    .Attr("begin_norm_axis", -1)
    .InferShape(InferLayerNormGrad)
    .Sbp(LayerNormGradSignatures)
    .Cost([](const OpContext& ctx, const std::vector<TensorDesc>& outs) {
      return LayerNormCost(ctx, outs, 13);
    })
    .Doc("Backward of layer_norm: dx, dgamma, dbeta from x, gamma, mean, inv_std and dy.");

}  // namespace ofl
