// concat: joins one or more tensors along `axis` (negative counts from the
// end); any dtype, all inputs of one dtype and equal off the axis.
// Registration, inference, SBP (a split on any other axis stays local, all-B,
// all-P -> P), cost and gradient (a slice of dy per input). Kernel:
// concat_cpu.cpp.
#include "oneflow_lite/core/checked_math.h"
#include "ops/grad.h"
#include "ops/op_registry.h"

namespace ofl {

namespace {

Maybe<std::vector<TensorDesc>> InferConcat(const OpContext& ctx) {
  const TensorDesc& first = ctx.input(0);
  OFL_ASSIGN_OR_RETURN(
      int64_t axis, NormalizeAxis(ctx.attrs.Get<int64_t>("axis"), first.shape.ndim(), ctx.where()));
  std::vector<int64_t> dims = first.shape.dims();
  for (int i = 1; i < ctx.num_inputs(); ++i) {
    const TensorDesc& d = ctx.input(i);
    OFL_ENSURE(d.dtype == first.dtype, ctx.where(), ": inputs[", i,
               "].dtype=", DataTypeName(d.dtype),
               " != inputs[0].dtype=", DataTypeName(first.dtype));
    bool same = d.shape.ndim() == first.shape.ndim();
    for (int64_t a = 0; same && a < d.shape.ndim(); ++a) {
      same = a == axis || d.shape[a] == first.shape[a];
    }
    OFL_ENSURE(same, ctx.where(), ": inputs[", i, "].shape=", d.shape,
               " does not match inputs[0].shape=", first.shape, " off axis ", axis);
    OFL_ASSIGN_OR_RETURN(dims[axis],
                         CheckedAdd(dims[axis], d.shape[axis],
                                    ctx.where() + ": the extent of axis " + std::to_string(axis) +
                                        " after inputs[" + std::to_string(i) + "]"));
  }
  return std::vector<TensorDesc>{{Shape(dims), first.dtype}};
}

std::vector<SbpSignature> ConcatSbp(const OpContext& ctx) {
  const int n = ctx.num_inputs();
  const int64_t ndim = ctx.input(0).shape.ndim();
  Maybe<int64_t> axis = NormalizeAxis(ctx.attrs.Get<int64_t>("axis"), ndim, ctx.where());
  std::vector<SbpSignature> sigs;
  for (int64_t a = 0; axis.ok() && a < ndim; ++a) {
    if (a != axis.value()) sigs.push_back({std::vector<Sbp>(n, Sbp::Split(a)), {Sbp::Split(a)}});
  }
  sigs.push_back({std::vector<Sbp>(n, Sbp::Broadcast()), {Sbp::Broadcast()}});
  // P only for floating inputs: integer tensors are ids and counters, never partial sums.
  if (IsFloating(ctx.input(0).dtype)) {
    sigs.push_back({std::vector<Sbp>(n, Sbp::PartialSum()), {Sbp::PartialSum()}});
  }
  return sigs;
}

OpCost ConcatCost(const OpContext&, const std::vector<TensorDesc>& outs) {
  return {0.0, outs[0].nbytes()};  // data movement only
}

// Input i's gradient is dy[..., offset_i : offset_i + size_i, ...] on the axis.
Status ConcatGrad(GradContext& g) {
  const int64_t ndim = g.InputDesc(0).shape.ndim();
  OFL_ASSIGN_OR_RETURN(int64_t axis,
                       NormalizeAxis(g.attrs().Get<int64_t>("axis"), ndim, g.forward().where()));
  int64_t offset = 0;
  for (int i = 0; i < g.num_inputs(); ++i) {
    const Shape& shape = g.InputDesc(i).shape;
    if (g.NeedsInputGrad(i)) {
      std::vector<int64_t> start(ndim, 0), stop = shape.dims(), step(ndim, 1);
      start[axis] = offset;
      stop[axis] = offset + shape[axis];
      OFL_ASSIGN_OR_RETURN(
          std::string dx,
          g.Emit1("slice", {g.OutputGrad(0)}, {{"start", start}, {"stop", stop}, {"step", step}}));
      g.SetInputGrad(i, dx);
    }
    offset += shape[axis];
  }
  return Status::OK();
}

OFL_REGISTER_OP("concat")
    .InputList("inputs")
    .Output("out")
    .Attr("axis", 0)
    .InferShape(InferConcat)
    .Sbp(ConcatSbp)
    .Cost(ConcatCost)
    .Grad(ConcatGrad)
    .Doc("Joins the inputs along axis; they share one dtype and every other extent.");

}  // namespace
}  // namespace ofl
