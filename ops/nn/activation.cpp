// Pointwise activations relu, gelu (exact erf form), tanh and sigmoid, and
// their backward ops relu_grad(y, dy), gelu_grad(x, dy), tanh_grad(y, dy),
// sigmoid_grad(y, dy). relu, tanh and sigmoid differentiate through their
// output y; gelu through its input x. Kernels: activation_cpu.cpp.
//
// FLOPs per element, as the kernels compute (erfc, exp, tanh count as 1):
//   relu 1 (max)                 relu_grad 1 (select)
//   gelu 4 (cdf = 0.5 * erfc(-x/sqrt2): 3, *x)
//   gelu_grad 10 (cdf 3; pdf: x*x, *-0.5, exp, *c; dy*(cdf + x*pdf): 3)
//   tanh 1                       tanh_grad 3 (y*y, 1-, *dy)
//   sigmoid 3 (exp(-x), +1, 1/)  sigmoid_grad 3 (1-y, *y, *dy)
#include "ops/grad.h"
#include "ops/nn/common.h"
#include "ops/op_registry.h"
#include "ops/sbp_rules.h"

namespace ofl {

namespace {

Maybe<std::vector<TensorDesc>> InferActivation(const OpContext& ctx) {
  OFL_RETURN_IF_ERROR(nn::EnsureComputeFloat(ctx, "x", ctx.input(0)));
  return std::vector<TensorDesc>{ctx.input(0)};
}

// (value, dy) -> dx; `value` is y or x as the op's first input name says.
InferFn InferActivationGrad(const std::string& value_name) {
  return [value_name](const OpContext& ctx) -> Maybe<std::vector<TensorDesc>> {
    OFL_RETURN_IF_ERROR(nn::EnsureComputeFloat(ctx, value_name, ctx.input(0)));
    OFL_RETURN_IF_ERROR(nn::EnsureSameDesc(ctx, "dy", ctx.input(1), value_name, ctx.input(0)));
    return std::vector<TensorDesc>{ctx.input(0)};
  };
}

// dx = backward_op(y or x, dy).
GradFn EmitActivationGrad(const std::string& backward_op, bool through_output) {
  return [backward_op, through_output](GradContext& g) -> Status {
    if (!g.NeedsInputGrad(0) || g.OutputGrad(0).empty()) return Status::OK();
    const std::string& value = through_output ? g.Output(0) : g.Input(0);
    OFL_ASSIGN_OR_RETURN(std::string dx, g.Emit1(backward_op, {value, g.OutputGrad(0)}));
    g.SetInputGrad(0, dx);
    return Status::OK();
  };
}

SbpFn ActivationSbp() { return Elementwise(PartialRule::kNone); }
// Backward ops are linear in dy: (B, P) -> P besides the pointwise splits.
SbpFn ActivationGradSbp() { return nn::WithLinearLastInput(Elementwise(PartialRule::kNone), 1); }

// Registers `name` and its backward `name_grad(value, dy)`, where value is
// the forward's output y (through_output) or its input x.
bool RegisterActivation(const std::string& name, bool through_output, double flops,
                        double grad_flops, const std::string& doc) {
  const std::string grad = name + "_grad";
  const std::string value = through_output ? "y" : "x";
  OpRegistry::Register(name)
      .Input("x")
      .Output("y")
      .InferShape(InferActivation)
      .Sbp(ActivationSbp())
      .Cost(nn::PerElementCost(flops))
      .Grad(EmitActivationGrad(grad, through_output))
      .Doc(doc);
  OpRegistry::Register(grad)
      .Input(value)
      .Input("dy")
      .Output("dx")
      .InferShape(InferActivationGrad(value))
      .Sbp(ActivationGradSbp())
      .Cost(nn::PerElementCost(grad_flops))
      .Doc("Backward of " + name + ": dx from " + value + " and dy.");
  return true;
}

const bool kRegistered =
    RegisterActivation("relu", true, 1, 1, "max(x, 0), elementwise.") &&
    RegisterActivation("gelu", false, 4, 10,
                       "x * Phi(x) with the exact normal CDF Phi(x) = "
                       "(1 + erf(x / sqrt(2))) / 2.") &&
    RegisterActivation("tanh", true, 1, 3, "Hyperbolic tangent, elementwise.") &&
    RegisterActivation("sigmoid", true, 3, 3, "1 / (1 + exp(-x)), elementwise.");

}  // namespace

}  // namespace ofl
