// slice and its backward op slice_grad: registration, inference, SBP, cost
// and gradient rules. Kernels: slice_cpu.cpp; any dtype.
//
//   slice(x; start, stop, step)           y = x[start[0]:stop[0]:step[0], ...], python semantics
//                                         (negatives count from the end, clamped), step >= 1
//   slice_grad(x_like, dy; same attrs)    zeros of x_like's shape with dy written into the
//                                         sliced block; x_like gives only the shape
//
// SBP: a split on an axis the slice does not touch (start 0, stop >= dim,
// step 1) stays local; all-B; both ops are linear, so P -> P (slice_grad:
// x_like B, dy P -> P).
#include "ops/array/slice_range.h"
#include "ops/grad.h"
#include "ops/op_registry.h"

namespace ofl {

namespace {

using Ints = std::vector<int64_t>;

std::string Str(const Ints& v) { return AttrToString(AttrValue(v)); }

// The attrs fit a tensor of `ndim` axes; returns the ranges over `shape`.
Maybe<std::vector<AxisRange>> CheckedRanges(const OpContext& ctx, const Shape& shape) {
  const int64_t ndim = shape.ndim();
  for (const char* name : {"start", "stop", "step"}) {
    const Ints& v = ctx.attrs.Get<Ints>(name);
    if (std::string(name) == "step" && v.empty()) continue;
    OFL_ENSURE(static_cast<int64_t>(v.size()) == ndim, ctx.where(), ": attribute '", name,
               "'=", Str(v), " must have one value per axis of x.shape=", shape);
  }
  const Ints& step = ctx.attrs.Get<Ints>("step");
  for (size_t a = 0; a < step.size(); ++a) {
    OFL_ENSURE(step[a] >= 1, ctx.where(), ": step=", Str(step), " must be >= 1 (axis ", a, " has ",
               step[a], ")");
  }
  return SliceRanges(shape, ctx.attrs);
}

Maybe<std::vector<TensorDesc>> InferSlice(const OpContext& ctx) {
  const TensorDesc& x = ctx.input(0);
  OFL_ASSIGN_OR_RETURN(std::vector<AxisRange> ranges, CheckedRanges(ctx, x.shape));
  return std::vector<TensorDesc>{{SlicedShape(ranges), x.dtype}};
}

Maybe<std::vector<TensorDesc>> InferSliceGrad(const OpContext& ctx) {
  const TensorDesc& like = ctx.input(0);
  const TensorDesc& dy = ctx.input(1);
  OFL_ASSIGN_OR_RETURN(std::vector<AxisRange> ranges, CheckedRanges(ctx, like.shape));
  OFL_ENSURE(dy.shape == SlicedShape(ranges), ctx.where(), ": dy.shape=", dy.shape,
             " != ", SlicedShape(ranges), ", the sliced shape of x_like.shape=", like.shape);
  OFL_ENSURE(dy.dtype == like.dtype, ctx.where(), ": dy.dtype=", DataTypeName(dy.dtype),
             " != x_like.dtype=", DataTypeName(like.dtype));
  return std::vector<TensorDesc>{like};
}

// Every input split on one untouched axis, all-B, and P in the last input
// when it is floating (integer tensors are ids and counters, never partial sums).
std::vector<SbpSignature> SliceSbp(const OpContext& ctx) {
  const int n = ctx.num_inputs();
  const Shape& shape = ctx.input(0).shape;
  Maybe<std::vector<AxisRange>> ranges = CheckedRanges(ctx, shape);
  std::vector<SbpSignature> sigs;
  for (int64_t a = 0; ranges.ok() && a < shape.ndim(); ++a) {
    if (ranges.value()[a].full(shape[a])) {
      sigs.push_back({std::vector<Sbp>(n, Sbp::Split(a)), {Sbp::Split(a)}});
    }
  }
  sigs.push_back({std::vector<Sbp>(n, Sbp::Broadcast()), {Sbp::Broadcast()}});
  if (IsFloating(ctx.inputs.back().dtype)) {
    std::vector<Sbp> partial(n, Sbp::Broadcast());
    partial.back() = Sbp::PartialSum();
    sigs.push_back({partial, {Sbp::PartialSum()}});
  }
  return sigs;
}

OpCost CopyCost(const OpContext&, const std::vector<TensorDesc>& outs) {
  return {0.0, outs[0].nbytes()};  // data movement only
}

AttrMap SliceAttrs(const GradContext& g) {
  AttrMap a;
  for (const char* name : {"start", "stop", "step"}) a.Set(name, g.attrs().Raw(name));
  return a;
}

Status SliceGrad(GradContext& g) {
  if (!g.NeedsInputGrad(0)) return Status::OK();
  OFL_ASSIGN_OR_RETURN(std::string dx,
                       g.Emit1("slice_grad", {g.Input(0), g.OutputGrad(0)}, SliceAttrs(g)));
  g.SetInputGrad(0, dx);
  return Status::OK();
}

// slice_grad is the adjoint of slice: its gradient with respect to dy is
// the slice of the incoming gradient; x_like gives only the shape.
Status SliceGradGrad(GradContext& g) {
  if (!g.NeedsInputGrad(1)) return Status::OK();
  OFL_ASSIGN_OR_RETURN(std::string ddy, g.Emit1("slice", {g.OutputGrad(0)}, SliceAttrs(g)));
  g.SetInputGrad(1, ddy);
  return Status::OK();
}

OFL_REGISTER_OP("slice")
    .Input("x")
    .Output("y")
    .RequiredAttr("start", Ints{})
    .RequiredAttr("stop", Ints{})
    .Attr("step", Ints{})
    .InferShape(InferSlice)
    .Sbp(SliceSbp)
    .Cost(CopyCost)
    .Grad(SliceGrad)
    .Doc("x[start:stop:step] on every axis with python semantics; step >= 1, empty step = 1s.");

OFL_REGISTER_OP("slice_grad")
    .Input("x_like")
    .Input("dy")
    .Output("dx")
    .RequiredAttr("start", Ints{})
    .RequiredAttr("stop", Ints{})
    .Attr("step", Ints{})
    .InferShape(InferSliceGrad)
    .Sbp(SliceSbp)
    .Cost(CopyCost)
    .Grad(SliceGradGrad)
    .Doc("Gradient of slice: zeros shaped like x_like with dy in the sliced block.");

}  // namespace
}  // namespace ofl
