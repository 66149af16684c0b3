// softmax(x) and log_softmax(x) over one axis (attr axis=-1, any axis), and
// their backward ops softmax_grad(y, dy) and log_softmax_grad(y, dy), which
// take the forward output y and the same axis. Numerically stable: the row
// maximum is subtracted before exp. Kernels: softmax_cpu.cpp.
//
// SBP: every input and output split on the same axis other than `axis`,
// or all B; the backward ops are also linear in dy ((B, P) -> P).
// FLOPs per element (exp and log count as 1; per-row terms such as the one
// log or reciprocal of each row are left out):
//   softmax 5 (max, x-max, exp, sum, *1/sum)
//   log_softmax 5 (max, x-max, exp, sum, x-max-log(sum))
//   softmax_grad 4 (dy*y, sum, dy-dot, *y)
//   log_softmax_grad 4 (sum dy, exp(y), *sum, dy-)
#include "ops/grad.h"
#include "ops/nn/common.h"
#include "ops/op_registry.h"

namespace ofl {

namespace {

Maybe<std::vector<TensorDesc>> InferSoftmax(const OpContext& ctx) {
  const TensorDesc& x = ctx.input(0);
  OFL_RETURN_IF_ERROR(nn::EnsureComputeFloat(ctx, "x", x));
  OFL_ASSIGN_OR_RETURN(int64_t axis, nn::NormalizeAxisAttr(ctx, "axis", "x", x.shape));
  (void)axis;
  return std::vector<TensorDesc>{x};
}

Maybe<std::vector<TensorDesc>> InferSoftmaxGrad(const OpContext& ctx) {
  const TensorDesc& y = ctx.input(0);
  OFL_RETURN_IF_ERROR(nn::EnsureComputeFloat(ctx, "y", y));
  OFL_RETURN_IF_ERROR(nn::EnsureSameDesc(ctx, "dy", ctx.input(1), "y", y));
  OFL_ASSIGN_OR_RETURN(int64_t axis, nn::NormalizeAxisAttr(ctx, "axis", "y", y.shape));
  (void)axis;
  return std::vector<TensorDesc>{y};
}

// Split on any axis but the normalised one (inference validated the axis).
std::vector<SbpSignature> SoftmaxSignatures(const OpContext& ctx) {
  const Shape& shape = ctx.input(0).shape;
  const int64_t ndim = shape.ndim();
  int64_t axis = ctx.attrs.Get<int64_t>("axis");
  if (axis < 0) axis += ndim;
  const int n = ctx.num_inputs();
  std::vector<SbpSignature> sigs;
  for (int64_t a = 0; a < ndim; ++a) {
    if (a == axis) continue;
    sigs.push_back({std::vector<Sbp>(n, Sbp::Split(a)), {Sbp::Split(a)}});
  }
  sigs.push_back({std::vector<Sbp>(n, Sbp::Broadcast()), {Sbp::Broadcast()}});
  return sigs;
}

SbpFn SoftmaxGradSbp() { return nn::WithLinearLastInput(SoftmaxSignatures, 1); }

// dx = backward_op(y, dy) with the forward's axis.
GradFn EmitSoftmaxGrad(const std::string& backward_op) {
  return [backward_op](GradContext& g) -> Status {
    if (!g.NeedsInputGrad(0) || g.OutputGrad(0).empty()) return Status::OK();
    AttrMap attrs{{"axis", g.attrs().Get<int64_t>("axis")}};
    OFL_ASSIGN_OR_RETURN(std::string dx,
                         g.Emit1(backward_op, {g.Output(0), g.OutputGrad(0)}, attrs));
    g.SetInputGrad(0, dx);
    return Status::OK();
  };
}

// Registers `name` (x -> y along `axis`) and its backward `name_grad(y, dy)`.
bool RegisterSoftmaxLike(const std::string& name, const std::string& doc,
                         const std::string& grad_doc) {
  OpRegistry::Register(name)
      .Input("x")
      .Output("y")
      .Attr("axis", -1)
      .InferShape(InferSoftmax)
      .Sbp(SoftmaxSignatures)
      .Cost(nn::PerElementCost(5))
      .Grad(EmitSoftmaxGrad(name + "_grad"))
      .Doc(doc);
  OpRegistry::Register(name + "_grad")
      .Input("y")
      .Input("dy")
      .Output("dx")
      .Attr("axis", -1)
      .InferShape(InferSoftmaxGrad)
      .Sbp(SoftmaxGradSbp())
      .Cost(nn::PerElementCost(4))
      .Doc(grad_doc);
  return true;
}

const bool kRegistered =
    RegisterSoftmaxLike("softmax",
                        "exp(x) / sum(exp(x)) along `axis`, computed with the maximum subtracted.",
                        "Backward of softmax: dx = y * (dy - sum(dy * y, axis)).") &&
    RegisterSoftmaxLike("log_softmax",
                        "x - log(sum(exp(x))) along `axis`, computed with the maximum subtracted.",
                        "Backward of log_softmax: dx = dy - exp(y) * sum(dy, axis).");

}  // namespace

}  // namespace ofl
