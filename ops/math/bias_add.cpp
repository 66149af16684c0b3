// bias_add(x, bias, axis=1): x + bias along one axis of x, bias 1-D of size
// x.shape[axis]. Registration, shape inference, SBP, cost and gradient; the
// kernel is in bias_add_cpu.cpp. The gradient of bias is reduce_sum over
// every other axis.
#include "ops/grad.h"
#include "ops/kernel.h"
#include "ops/op_registry.h"

namespace ofl {

namespace {

Maybe<int64_t> BiasAxis(const OpContext& ctx) {
  const Shape& x = ctx.input(0).shape;
  const int64_t axis = ctx.attrs.Get<int64_t>("axis");
  OFL_ENSURE(axis >= -x.ndim() && axis < x.ndim(), ctx.where(), ": axis=", axis,
             " is out of range for x.shape=", x, " (", x.ndim(), " dims)");
  return axis < 0 ? axis + x.ndim() : axis;
}

Maybe<std::vector<TensorDesc>> InferBiasAdd(const OpContext& ctx) {
  const TensorDesc& x = ctx.input(0);
  const TensorDesc& bias = ctx.input(1);
  OFL_ENSURE(x.dtype == bias.dtype, ctx.where(), ": x.dtype=", DataTypeName(x.dtype),
             " != bias.dtype=", DataTypeName(bias.dtype));
  OFL_ENSURE(IsComputeFloat(x.dtype), ctx.where(), ": dtype ", DataTypeName(x.dtype),
             " is not float32 or float64");
  OFL_ASSIGN_OR_RETURN(int64_t axis, BiasAxis(ctx));
  OFL_ENSURE(bias.shape.ndim() == 1, ctx.where(),
             ": bias must be 1-D, got bias.shape=", bias.shape);
  OFL_ENSURE(bias.shape[0] == x.shape[axis], ctx.where(), ": bias.shape[0]=", bias.shape[0],
             " != x.shape[", axis, "]=", x.shape[axis]);
  return std::vector<TensorDesc>{x};
}

// A split of x along the bias axis splits bias too; along any other axis
// bias is B. Linear in (x, bias) together: P, P -> P.
std::vector<SbpSignature> BiasAddSbp(const OpContext& ctx) {
  const Shape& x = ctx.input(0).shape;
  const int64_t axis = BiasAxis(ctx).value();
  std::vector<SbpSignature> sigs;
  for (int64_t j = 0; j < x.ndim(); ++j) {
    if (x[j] == 1) continue;
    Sbp bias_sbp = j == axis ? Sbp::Split(0) : Sbp::Broadcast();
    sigs.push_back({{Sbp::Split(j), bias_sbp}, {Sbp::Split(j)}});
  }
  sigs.push_back({{Sbp::Broadcast(), Sbp::Broadcast()}, {Sbp::Broadcast()}});
  sigs.push_back({{Sbp::PartialSum(), Sbp::PartialSum()}, {Sbp::PartialSum()}});
  return sigs;
}

// One add per element of x.
OpCost BiasAddCost(const OpContext&, const std::vector<TensorDesc>& outs) {
  return {static_cast<double>(outs[0].shape.NumElements()), outs[0].nbytes()};
}

Status BiasAddGrad(GradContext& g) {
  const std::string dy = g.OutputGrad(0);
  if (g.NeedsInputGrad(0)) g.SetInputGrad(0, dy);
  if (!g.NeedsInputGrad(1)) return Status::OK();
  OFL_ASSIGN_OR_RETURN(int64_t axis, BiasAxis(g.forward()));
  const int64_t ndim = g.InputDesc(0).shape.ndim();
  if (ndim == 1) {  // reduce_sum's empty axes would mean "all": nothing to reduce
    g.SetInputGrad(1, dy);
    return Status::OK();
  }
  std::vector<int64_t> others;
  for (int64_t j = 0; j < ndim; ++j) {
    if (j != axis) others.push_back(j);
  }
  OFL_ASSIGN_OR_RETURN(std::string db,
                       g.Emit1("reduce_sum", {dy}, {{"axes", others}, {"keepdims", false}}));
  g.SetInputGrad(1, db);
  return Status::OK();
}

OFL_REGISTER_OP("bias_add")
    .Input("x")
    .Input("bias")
    .Output("out")
    .Attr("axis", 1)
    .InferShape(InferBiasAdd)
    .Sbp(BiasAddSbp)
    .Cost(BiasAddCost)
    .Grad(BiasAddGrad)
    .Doc("x + bias broadcast along x's axis `axis`; bias is 1-D of size x.shape[axis].");

}  // namespace
}  // namespace ofl
