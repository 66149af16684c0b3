// The optimizer update ops: sgd_update and adam_update. They write the
// parameter and its state in place (mutable inputs) and have no outputs.
// graph/optimizer_pass.cpp appends one per trainable variable. Semantics
// follow PyTorch's SGD, Adam and AdamW (decoupled_weight_decay=true).
// Both take an optional last input "lr": a float scalar that, when given,
// replaces the "lr" attribute, so a graph can feed a scheduled rate per
// step without recompiling; callers that leave it out see no change.
#include "ops/op_registry.h"

namespace ofl {

namespace {

Status SameAsParam(const OpContext& ctx, int i) {
  const TensorDesc& p = ctx.input(0);
  const TensorDesc& d = ctx.input(i);
  static const char* kNames[] = {"param", "grad", "state", "state", "step"};
  OFL_ENSURE(d.shape == p.shape, ctx.where(), ": ", kNames[std::min(i, 4)], ".shape=", d.shape,
             " != param.shape=", p.shape);
  OFL_ENSURE(d.dtype == p.dtype, ctx.where(), ": ", kNames[std::min(i, 4)],
             ".dtype=", DataTypeName(d.dtype), " != param.dtype=", DataTypeName(p.dtype));
  return Status::OK();
}

Status CheckCommon(const OpContext& ctx, int num_same) {
  OFL_ENSURE(IsComputeFloat(ctx.input(0).dtype), ctx.where(), ": param dtype ",
             DataTypeName(ctx.input(0).dtype), " is not float32 or float64");
  for (int i = 1; i < num_same; ++i) OFL_RETURN_IF_ERROR(SameAsParam(ctx, i));
  double lr = ctx.attrs.Get<double>("lr");
  OFL_ENSURE(lr >= 0, ctx.where(), ": lr=", lr, " is negative");
  const int lr_index = num_same + (ctx.op_type == "adam_update" ? 1 : 0);
  if (ctx.num_inputs() > lr_index) {
    const TensorDesc& fed = ctx.input(lr_index);
    OFL_ENSURE(fed.shape.NumElements() == 1 && IsComputeFloat(fed.dtype), ctx.where(),
               ": lr input must be a float32 or float64 scalar, got shape ", fed.shape, " ",
               DataTypeName(fed.dtype));
  }
  double wd = ctx.attrs.Get<double>("weight_decay");
  OFL_ENSURE(wd >= 0, ctx.where(), ": weight_decay=", wd, " is negative");
  return Status::OK();
}

Maybe<std::vector<TensorDesc>> InferSgd(const OpContext& ctx) {
  OFL_RETURN_IF_ERROR(CheckCommon(ctx, 3));
  double m = ctx.attrs.Get<double>("momentum");
  OFL_ENSURE(m >= 0, ctx.where(), ": momentum=", m, " is negative");
  return std::vector<TensorDesc>{};
}

Maybe<std::vector<TensorDesc>> InferAdam(const OpContext& ctx) {
  OFL_RETURN_IF_ERROR(CheckCommon(ctx, 4));
  const TensorDesc& step = ctx.input(4);
  OFL_ENSURE(step.shape.NumElements() == 1 && step.dtype == DataType::kInt64, ctx.where(),
             ": step must be an int64 scalar, got shape ", step.shape, " ",
             DataTypeName(step.dtype));
  double b1 = ctx.attrs.Get<double>("beta1"), b2 = ctx.attrs.Get<double>("beta2");
  OFL_ENSURE(b1 >= 0 && b1 < 1 && b2 >= 0 && b2 < 1, ctx.where(), ": betas (", b1, ", ", b2,
             ") must lie in [0, 1)");
  OFL_ENSURE(ctx.attrs.Get<double>("eps") > 0, ctx.where(), ": eps must be positive");
  return std::vector<TensorDesc>{};
}

// Parameter, gradient and state share one layout: any split of the
// parameter, or all broadcast. A step counter is always broadcast.
SbpFn UpdateSbp(int num_elementwise, int num_scalar) {
  return [=](const OpContext& ctx) {
    std::vector<SbpSignature> sigs;
    // Scalars (the step counter, the optional fed lr) are broadcast.
    const int scalars = num_scalar + (ctx.num_inputs() - num_elementwise - num_scalar);
    auto with = [&](const Sbp& s) {
      std::vector<Sbp> ins(num_elementwise, s);
      ins.insert(ins.end(), scalars, Sbp::Broadcast());
      return SbpSignature{ins, {}};
    };
    for (int64_t a = 0; a < ctx.input(0).shape.ndim(); ++a) sigs.push_back(with(Sbp::Split(a)));
    sigs.push_back(with(Sbp::Broadcast()));
    return sigs;
  };
}

// Flops per parameter element, counted from the kernel's arithmetic:
// SGD: weight decay (mul, add) 2 + momentum (mul, add) 2 + step (mul, sub) 2.
constexpr double kSgdFlopsPerElement = 6;
// Adam: weight decay 2, first moment 3, second moment 4, bias corrections 2,
// sqrt + eps + divide 3, step (mul, sub) 2.
constexpr double kAdamFlopsPerElement = 16;

OpCost PerElement(const OpContext& ctx, double flops) {
  return {flops * static_cast<double>(ctx.input(0).shape.NumElements()), 0};
}

}  // namespace

OFL_REGISTER_OP("sgd_update")
    .MutableInput("param")
    .Input("grad")
    .MutableInput("momentum_buffer")
    .OptionalInput("lr")
    .Attr("lr", 0.01)
    .Attr("momentum", 0.0)
    .Attr("weight_decay", 0.0)
    .InferShape(InferSgd)
    .Sbp(UpdateSbp(3, 0))
    .Cost([](const OpContext& c, const auto&) { return PerElement(c, kSgdFlopsPerElement); })
    .Doc(
        "SGD step in place: g += wd*p; buf = momentum*buf + g; p -= lr*buf (PyTorch). "
        "The optional scalar input lr replaces the lr attribute.");

OFL_REGISTER_OP("adam_update")
    .MutableInput("param")
    .Input("grad")
    .MutableInput("m")
    .MutableInput("v")
    .MutableInput("step")
    .OptionalInput("lr")
    .Attr("lr", 0.001)
    .Attr("beta1", 0.9)
    .Attr("beta2", 0.999)
    .Attr("eps", 1e-8)
    .Attr("weight_decay", 0.0)
    .Attr("decoupled_weight_decay", false)
    .InferShape(InferAdam)
    .Sbp(UpdateSbp(4, 1))
    .Cost([](const OpContext& c, const auto&) { return PerElement(c, kAdamFlopsPerElement); })
    .Doc(
        "Adam step in place (AdamW when decoupled_weight_decay): step += 1, bias-corrected "
        "moments, p -= lr * m_hat / (sqrt(v_hat) + eps). The optional scalar input lr "
        "replaces the lr attribute.");

}  // namespace ofl
