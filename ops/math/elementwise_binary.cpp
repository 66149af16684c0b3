// add, sub, mul, div: elementwise binary ops with numpy broadcasting.
// Registration, shape inference, SBP, cost and gradient; kernels are in
// elementwise_binary_cpu.cpp. Gradients reduce over the broadcast axes with
// sum_to (ops/math/broadcast.cpp).
#include "ops/grad.h"
#include "ops/kernel.h"
#include "ops/op_registry.h"
#include "ops/sbp_rules.h"

namespace ofl {

namespace {

Maybe<std::vector<TensorDesc>> InferBinary(const OpContext& ctx) {
  const TensorDesc& a = ctx.input(0);
  const TensorDesc& b = ctx.input(1);
  OFL_ENSURE(a.dtype == b.dtype, ctx.where(), ": a.dtype=", DataTypeName(a.dtype),
             " != b.dtype=", DataTypeName(b.dtype));
  OFL_ENSURE(IsComputeFloat(a.dtype), ctx.where(), ": dtype ", DataTypeName(a.dtype),
             " is not float32 or float64");
  const int64_t n = std::max(a.shape.ndim(), b.shape.ndim());
  std::vector<int64_t> out(n);
  for (int64_t i = 0; i < n; ++i) {
    int64_t ia = i - (n - a.shape.ndim());
    int64_t ib = i - (n - b.shape.ndim());
    int64_t da = ia >= 0 ? a.shape[ia] : 1;
    int64_t db = ib >= 0 ? b.shape[ib] : 1;
    OFL_ENSURE(da == db || da == 1 || db == 1, ctx.where(), ": a.shape=", a.shape,
               " and b.shape=", b.shape, " cannot be broadcast (a.shape[", ia, "]=", da,
               " vs b.shape[", ib, "]=", db, ")");
    out[i] = da == 1 ? db : da;
  }
  return std::vector<TensorDesc>{{Shape(out), a.dtype}};
}

// One flop per output element.
OpCost BinaryCost(const OpContext&, const std::vector<TensorDesc>& outs) {
  return {static_cast<double>(outs[0].shape.NumElements()), outs[0].nbytes()};
}

// div is linear in its numerator only: P / B -> P.
std::vector<SbpSignature> DivSbp(const OpContext& ctx) {
  std::vector<SbpSignature> sigs = Elementwise(PartialRule::kNone)(ctx);
  sigs.push_back({{Sbp::PartialSum(), Sbp::Broadcast()}, {Sbp::PartialSum()}});
  return sigs;
}

// `grad` (shaped like the output) summed down to forward input i's shape.
Maybe<std::string> SumToInput(GradContext& g, const std::string& grad, int i) {
  const Shape& shape = g.InputDesc(i).shape;
  if (shape == g.OutputDesc(0).shape) return grad;
  return g.Emit1("sum_to", {grad}, {{"shape", shape.dims()}});
}

Status AddGrad(GradContext& g) {
  for (int i = 0; i < 2; ++i) {
    if (!g.NeedsInputGrad(i)) continue;
    OFL_ASSIGN_OR_RETURN(std::string d, SumToInput(g, g.OutputGrad(0), i));
    g.SetInputGrad(i, d);
  }
  return Status::OK();
}

Status SubGrad(GradContext& g) {
  if (g.NeedsInputGrad(0)) {
    OFL_ASSIGN_OR_RETURN(std::string da, SumToInput(g, g.OutputGrad(0), 0));
    g.SetInputGrad(0, da);
  }
  if (g.NeedsInputGrad(1)) {
    OFL_ASSIGN_OR_RETURN(std::string summed, SumToInput(g, g.OutputGrad(0), 1));
    OFL_ASSIGN_OR_RETURN(std::string db, g.Emit1("scalar_mul", {summed}, {{"value", -1.0}}));
    g.SetInputGrad(1, db);
  }
  return Status::OK();
}

// da = dy * b, db = dy * a, each summed to its input's shape.
Status MulGrad(GradContext& g) {
  for (int i = 0; i < 2; ++i) {
    if (!g.NeedsInputGrad(i)) continue;
    OFL_ASSIGN_OR_RETURN(std::string prod, g.Emit1("mul", {g.OutputGrad(0), g.Input(1 - i)}));
    OFL_ASSIGN_OR_RETURN(std::string d, SumToInput(g, prod, i));
    g.SetInputGrad(i, d);
  }
  return Status::OK();
}

// y = a / b: da = dy / b, db = -dy * a / b^2 = -(dy * y) / b.
Status DivGrad(GradContext& g) {
  const std::string dy = g.OutputGrad(0);
  const std::string& b = g.Input(1);
  if (g.NeedsInputGrad(0)) {
    OFL_ASSIGN_OR_RETURN(std::string q, g.Emit1("div", {dy, b}));
    OFL_ASSIGN_OR_RETURN(std::string da, SumToInput(g, q, 0));
    g.SetInputGrad(0, da);
  }
  if (g.NeedsInputGrad(1)) {
    OFL_ASSIGN_OR_RETURN(std::string dy_y, g.Emit1("mul", {dy, g.Output(0)}));
    OFL_ASSIGN_OR_RETURN(std::string q, g.Emit1("div", {dy_y, b}));
    OFL_ASSIGN_OR_RETURN(std::string summed, SumToInput(g, q, 1));
    OFL_ASSIGN_OR_RETURN(std::string db, g.Emit1("scalar_mul", {summed}, {{"value", -1.0}}));
    g.SetInputGrad(1, db);
  }
  return Status::OK();
}

OFL_REGISTER_OP("add")
    .Input("a")
    .Input("b")
    .Output("out")
    .InferShape(InferBinary)
    .Sbp(Elementwise(PartialRule::kAllPartial))
    .Cost(BinaryCost)
    .Grad(AddGrad)
    .Doc("a + b with numpy broadcasting.");

OFL_REGISTER_OP("sub")
    .Input("a")
    .Input("b")
    .Output("out")
    .InferShape(InferBinary)
    .Sbp(Elementwise(PartialRule::kAllPartial))
    .Cost(BinaryCost)
    .Grad(SubGrad)
    .Doc("a - b with numpy broadcasting.");

OFL_REGISTER_OP("mul")
    .Input("a")
    .Input("b")
    .Output("out")
    .InferShape(InferBinary)
    .Sbp(Elementwise(PartialRule::kOnePartial))
    .Cost(BinaryCost)
    .Grad(MulGrad)
    .Doc("a * b with numpy broadcasting.");

OFL_REGISTER_OP("div")
    .Input("a")
    .Input("b")
    .Output("out")
    .InferShape(InferBinary)
    .Sbp(DivSbp)
    .Cost(BinaryCost)
    .Grad(DivGrad)
    .Doc("a / b with numpy broadcasting.");

}  // namespace
}  // namespace ofl
