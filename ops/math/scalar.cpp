// scalar_add, scalar_mul, scalar_pow: one tensor and a float attribute.
// Registration, shape inference, SBP, cost and gradient; kernels are in
// scalar_cpu.cpp.
//
//   scalar_add(x, value):    x + value
//   scalar_mul(x, value):    x * value
//   scalar_pow(x, exponent): x ** exponent (elementwise; keep x > 0 for a
//                            fractional exponent, as with std::pow)
#include "ops/grad.h"
#include "ops/kernel.h"
#include "ops/op_registry.h"
#include "ops/sbp_rules.h"

namespace ofl {

namespace {

Maybe<std::vector<TensorDesc>> InferScalarOp(const OpContext& ctx) {
  const TensorDesc& x = ctx.input(0);
  OFL_ENSURE(IsComputeFloat(x.dtype), ctx.where(), ": x.dtype=", DataTypeName(x.dtype),
             " is not float32 or float64");
  return std::vector<TensorDesc>{x};
}

// One flop per element (pow counted as one, like the other elementwise ops).
OpCost ScalarCost(const OpContext&, const std::vector<TensorDesc>& outs) {
  return {static_cast<double>(outs[0].shape.NumElements()), outs[0].nbytes()};
}

Status ScalarAddGrad(GradContext& g) {
  if (g.NeedsInputGrad(0)) g.SetInputGrad(0, g.OutputGrad(0));
  return Status::OK();
}

Status ScalarMulGrad(GradContext& g) {
  if (!g.NeedsInputGrad(0)) return Status::OK();
  OFL_ASSIGN_OR_RETURN(std::string dx, g.Emit1("scalar_mul", {g.OutputGrad(0)},
                                               {{"value", g.attrs().Get<double>("value")}}));
  g.SetInputGrad(0, dx);
  return Status::OK();
}

// dx = dy * e * x^(e-1); e = 0 and e = 1 avoid the power (and 0 * inf at x = 0).
Status ScalarPowGrad(GradContext& g) {
  if (!g.NeedsInputGrad(0)) return Status::OK();
  const double e = g.attrs().Get<double>("exponent");
  const std::string dy = g.OutputGrad(0);
  if (e == 1.0) {
    g.SetInputGrad(0, dy);
    return Status::OK();
  }
  std::string dx;
  if (e == 0.0) {
    OFL_ASSIGN_OR_RETURN(dx, g.Emit1("scalar_mul", {dy}, {{"value", 0.0}}));
  } else {
    OFL_ASSIGN_OR_RETURN(std::string p,
                         g.Emit1("scalar_pow", {g.Input(0)}, {{"exponent", e - 1.0}}));
    OFL_ASSIGN_OR_RETURN(std::string scaled, g.Emit1("scalar_mul", {p}, {{"value", e}}));
    OFL_ASSIGN_OR_RETURN(dx, g.Emit1("mul", {dy, scaled}));
  }
  g.SetInputGrad(0, dx);
  return Status::OK();
}

OFL_REGISTER_OP("scalar_add")
    .Input("x")
    .Output("out")
    .RequiredAttr("value", 0.0)
    .InferShape(InferScalarOp)
    .Sbp(Elementwise(PartialRule::kNone))  // P would add value once per rank
    .Cost(ScalarCost)
    .Grad(ScalarAddGrad)
    .Doc("x + value.");

OFL_REGISTER_OP("scalar_mul")
    .Input("x")
    .Output("out")
    .RequiredAttr("value", 0.0)
    .InferShape(InferScalarOp)
    .Sbp(Elementwise(PartialRule::kAllPartial))
    .Cost(ScalarCost)
    .Grad(ScalarMulGrad)
    .Doc("x * value.");

OFL_REGISTER_OP("scalar_pow")
    .Input("x")
    .Output("out")
    .RequiredAttr("exponent", 0.0)
    .InferShape(InferScalarOp)
    .Sbp(Elementwise(PartialRule::kNone))
    .Cost(ScalarCost)
    .Grad(ScalarPowGrad)
    .Doc("x ** exponent, elementwise.");

}  // namespace
}  // namespace ofl
