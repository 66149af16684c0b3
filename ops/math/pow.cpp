// pow(a, b): a ** b elementwise with numpy broadcasting, float32/float64 (a
// tensor exponent; a number exponent is scalar_pow). Registration,
// inference, SBP, cost and gradient; kernels: pow_cpu.cpp, pow_cuda.cu.
// A negative base with a fractional exponent gives NaN (IEEE pow).
// Gradient: da = dy * b * a ** (b - 1), db = dy * y * log(a) (NaN for a < 0,
// as in PyTorch), each summed to its input's shape.
#include "ops/grad.h"
#include "ops/kernel.h"
#include "ops/math/value_infer.h"
#include "ops/op_registry.h"
#include "ops/sbp_rules.h"

namespace ofl {

namespace {

Maybe<std::vector<TensorDesc>> InferPow(const OpContext& ctx) {
  const TensorDesc& a = ctx.input(0);
  const TensorDesc& b = ctx.input(1);
  OFL_ENSURE(a.dtype == b.dtype, ctx.where(), ": a.dtype=", DataTypeName(a.dtype),
             " != b.dtype=", DataTypeName(b.dtype));
  OFL_ENSURE(IsComputeFloat(a.dtype), ctx.where(), ": dtype ", DataTypeName(a.dtype),
             " is not float32 or float64");
  OFL_ASSIGN_OR_RETURN(Shape out, BroadcastShapes(ctx, {0, 1}));
  return std::vector<TensorDesc>{{out, a.dtype}};
}

// One pow per output element.
OpCost PowCost(const OpContext&, const std::vector<TensorDesc>& outs) {
  return {static_cast<double>(outs[0].shape.NumElements()), outs[0].nbytes()};
}

Maybe<std::string> SumToInput(GradContext& g, const std::string& grad, int i) {
  const Shape& shape = g.InputDesc(i).shape;
  if (shape == g.OutputDesc(0).shape) return grad;
  return g.Emit1("sum_to", {grad}, {{"shape", shape.dims()}});
}

Status PowGrad(GradContext& g) {
  const std::string& dy = g.OutputGrad(0);
  if (dy.empty()) return Status::OK();
  const std::string& a = g.Input(0);
  const std::string& b = g.Input(1);
  if (g.NeedsInputGrad(0)) {
    OFL_ASSIGN_OR_RETURN(std::string b1, g.Emit1("scalar_add", {b}, {{"value", -1.0}}));
    OFL_ASSIGN_OR_RETURN(std::string p, g.Emit1("pow", {a, b1}));
    OFL_ASSIGN_OR_RETURN(std::string bp, g.Emit1("mul", {p, b}));
    OFL_ASSIGN_OR_RETURN(std::string da, g.Emit1("mul", {dy, bp}));
    OFL_ASSIGN_OR_RETURN(da, SumToInput(g, da, 0));
    g.SetInputGrad(0, da);
  }
  if (g.NeedsInputGrad(1)) {
    OFL_ASSIGN_OR_RETURN(std::string log_a, g.Emit1("log", {a}));
    OFL_ASSIGN_OR_RETURN(std::string y_log, g.Emit1("mul", {g.Output(0), log_a}));
    OFL_ASSIGN_OR_RETURN(std::string db, g.Emit1("mul", {dy, y_log}));
    OFL_ASSIGN_OR_RETURN(db, SumToInput(g, db, 1));
    g.SetInputGrad(1, db);
  }
  return Status::OK();
}

OFL_REGISTER_OP("pow")
    .Input("a")
    .Input("b")
    .Output("out")
    .InferShape(InferPow)
    .Sbp(Elementwise(PartialRule::kNone))
    .Cost(PowCost)
    .Grad(PowGrad)
    .Doc("a ** b elementwise with numpy broadcasting (a tensor exponent).");

}  // namespace
}  // namespace ofl
