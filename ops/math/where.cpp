// where(cond, a, b): a where cond is true, else b, with numpy broadcasting
// of all three. cond is bool; a and b share a dtype (float32, float64,
// int32, int64 or bool), which the output has. Registration, inference, SBP,
// cost and gradient; kernels: where_cpu.cpp, where_cuda.cu.
// Gradient: da = where(cond, dy, 0), db = where(cond, 0, dy), each summed to
// its input's shape. Linear in (a, b) together: (B, P, P) -> P.
#include "ops/grad.h"
#include "ops/kernel.h"
#include "ops/math/value_infer.h"
#include "ops/op_registry.h"
#include "ops/sbp_rules.h"

namespace ofl {

namespace {

Maybe<std::vector<TensorDesc>> InferWhere(const OpContext& ctx) {
  const TensorDesc& cond = ctx.input(0);
  const TensorDesc& a = ctx.input(1);
  const TensorDesc& b = ctx.input(2);
  OFL_ENSURE(cond.dtype == DataType::kBool, ctx.where(), ": cond.dtype=", DataTypeName(cond.dtype),
             " is not bool (compare first, e.g. x > 0)");
  OFL_ENSURE(a.dtype == b.dtype, ctx.where(), ": a.dtype=", DataTypeName(a.dtype),
             " != b.dtype=", DataTypeName(b.dtype));
  OFL_ENSURE(IsValueType(a.dtype), ctx.where(), ": dtype ", DataTypeName(a.dtype),
             " is not float32, float64, int32, int64 or bool");
  OFL_ASSIGN_OR_RETURN(Shape out, BroadcastShapes(ctx, {0, 1, 2}));
  return std::vector<TensorDesc>{{out, a.dtype}};
}

std::vector<SbpSignature> WhereSbp(const OpContext& ctx) {
  std::vector<SbpSignature> sigs = Elementwise(PartialRule::kNone)(ctx);
  if (IsFloating(ctx.input(1).dtype)) {
    sigs.push_back({{Sbp::Broadcast(), Sbp::PartialSum(), Sbp::PartialSum()}, {Sbp::PartialSum()}});
  }
  return sigs;
}

// One select per output element.
OpCost WhereCost(const OpContext&, const std::vector<TensorDesc>& outs) {
  return {static_cast<double>(outs[0].shape.NumElements()), outs[0].nbytes()};
}

Status WhereGrad(GradContext& g) {
  const std::string& dy = g.OutputGrad(0);
  if (dy.empty() || (!g.NeedsInputGrad(1) && !g.NeedsInputGrad(2))) return Status::OK();
  OFL_ASSIGN_OR_RETURN(std::string zeros, g.Emit1("zeros_like", {dy}));
  for (int i = 1; i <= 2; ++i) {
    if (!g.NeedsInputGrad(i)) continue;
    const std::string& when_true = i == 1 ? dy : zeros;
    const std::string& when_false = i == 1 ? zeros : dy;
    OFL_ASSIGN_OR_RETURN(std::string d, g.Emit1("where", {g.Input(0), when_true, when_false}));
    const Shape& shape = g.InputDesc(i).shape;
    if (shape != g.OutputDesc(0).shape) {
      OFL_ASSIGN_OR_RETURN(d, g.Emit1("sum_to", {d}, {{"shape", shape.dims()}}));
    }
    g.SetInputGrad(i, d);
  }
  return Status::OK();
}

OFL_REGISTER_OP("where")
    .Input("cond")
    .Input("a")
    .Input("b")
    .Output("out")
    .InferShape(InferWhere)
    .Sbp(WhereSbp)
    .Cost(WhereCost)
    .Grad(WhereGrad)
    .Doc("a where cond is true, else b, with numpy broadcasting of all three.");

}  // namespace
}  // namespace ofl
