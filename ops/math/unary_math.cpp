// exp, log, abs and sign: elementwise math of one tensor. Registration,
// inference, SBP, cost and gradients; kernels: unary_math_cpu.cpp,
// unary_math_cuda.cu. exp and log take float32/float64; abs and sign also
// int32/int64. log of a negative number is NaN and of 0 is -inf (IEEE).
// Gradients: exp dy * y; log dy / x; abs dy * sign(x) (0 at x = 0, as
// PyTorch); sign has none (zero almost everywhere: nothing flows back).
#include "ops/grad.h"
#include "ops/kernel.h"
#include "ops/op_registry.h"
#include "ops/sbp_rules.h"

namespace ofl {

namespace {

InferFn InferUnary(bool integers_too) {
  return [integers_too](const OpContext& ctx) -> Maybe<std::vector<TensorDesc>> {
    const TensorDesc& x = ctx.input(0);
    const bool integer = x.dtype == DataType::kInt32 || x.dtype == DataType::kInt64;
    OFL_ENSURE(IsComputeFloat(x.dtype) || (integers_too && integer), ctx.where(),
               ": x.dtype=", DataTypeName(x.dtype), " is not float32 or float64",
               integers_too ? std::string(", int32 or int64") : std::string());
    return std::vector<TensorDesc>{x};
  };
}

// One function evaluation per element.
OpCost UnaryCost(const OpContext&, const std::vector<TensorDesc>& outs) {
  return {static_cast<double>(outs[0].shape.NumElements()), outs[0].nbytes()};
}

Status ExpGrad(GradContext& g) {
  if (!g.NeedsInputGrad(0) || g.OutputGrad(0).empty()) return Status::OK();
  OFL_ASSIGN_OR_RETURN(std::string dx, g.Emit1("mul", {g.OutputGrad(0), g.Output(0)}));
  g.SetInputGrad(0, dx);
  return Status::OK();
}

Status LogGrad(GradContext& g) {
  if (!g.NeedsInputGrad(0) || g.OutputGrad(0).empty()) return Status::OK();
  OFL_ASSIGN_OR_RETURN(std::string dx, g.Emit1("div", {g.OutputGrad(0), g.Input(0)}));
  g.SetInputGrad(0, dx);
  return Status::OK();
}

Status AbsGrad(GradContext& g) {
  if (!g.NeedsInputGrad(0) || g.OutputGrad(0).empty()) return Status::OK();
  OFL_ASSIGN_OR_RETURN(std::string sign, g.Emit1("sign", {g.Input(0)}));
  OFL_ASSIGN_OR_RETURN(std::string dx, g.Emit1("mul", {g.OutputGrad(0), sign}));
  g.SetInputGrad(0, dx);
  return Status::OK();
}

Status NoGradient(GradContext&) { return Status::OK(); }

bool RegisterUnary(const std::string& name, bool integers_too, GradFn grad,
                   const std::string& doc) {
  OpRegistry::Register(name)
      .Input("x")
      .Output("y")
      .InferShape(InferUnary(integers_too))
      .Sbp(Elementwise(PartialRule::kNone))
      .Cost(UnaryCost)
      .Grad(std::move(grad))
      .Doc(doc);
  return true;
}

const bool kRegistered =
    RegisterUnary("exp", false, ExpGrad, "e ** x, elementwise.") &&
    RegisterUnary("log", false, LogGrad, "The natural logarithm of x, elementwise.") &&
    RegisterUnary("abs", true, AbsGrad, "|x|, elementwise.") &&
    RegisterUnary("sign", true, NoGradient, "-1, 0 or 1 as x is negative, zero or positive.");

}  // namespace
}  // namespace ofl
