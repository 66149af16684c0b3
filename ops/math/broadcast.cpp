// broadcast_to and sum_to, a pair of adjoint ops: registration, shape
// inference, SBP, cost and gradient. Kernels are in broadcast_cpu.cpp.
//
//   broadcast_to(x, shape, axes=[]): x repeated along axes to `shape`.
//   sum_to(x, shape, axes=[]):       x summed down to `shape`, the shape it
//                                    was broadcast from; the adjoint of
//                                    broadcast_to(., shape=x.shape, axes).
//
// Without `axes`, numpy's rules: the small shape is aligned to the right and
// each of its axes is 1 or equal. With `axes` (positions in the large shape,
// negative allowed), the small shape lacks exactly those axes: a size-1 axis
// is inserted at each before the numpy rules apply. That is how the
// gradient of reduce_sum(keepdims=false) broadcasts back with no reshape op:
// broadcast_to(dy, shape=x.shape, axes=reduced axes).
#include "ops/grad.h"
#include "ops/kernel.h"
#include "ops/math/axes.h"
#include "ops/op_registry.h"
#include "ops/sbp_rules.h"

namespace ofl {

namespace {

struct ShapePair {
  Shape small, big;
  std::string small_name, big_name;  // for messages: "x.shape", "shape"
};

// Checks that `small` broadcasts to `big` with the op's axes; returns the
// normalised axes.
Maybe<std::vector<int64_t>> CheckBroadcastable(const OpContext& ctx, const ShapePair& p) {
  const DataType dtype = ctx.input(0).dtype;
  OFL_ENSURE(IsComputeFloat(dtype), ctx.where(), ": x.dtype=", DataTypeName(dtype),
             " is not float32 or float64");
  const Shape shape(ctx.attrs.Get<std::vector<int64_t>>("shape"));
  for (int64_t i = 0; i < shape.ndim(); ++i) {
    OFL_ENSURE(shape[i] >= 0, ctx.where(), ": shape[", i, "]=", shape[i], " is negative");
  }
  const std::vector<int64_t>& raw_axes = ctx.attrs.Get<std::vector<int64_t>>("axes");
  OFL_ASSIGN_OR_RETURN(std::vector<int64_t> axes,
                       math::NormalizeAxes(raw_axes, p.big.ndim(), ctx.where(),
                                           p.big_name + "=" + p.big.ToString()));
  if (axes.empty()) {
    OFL_ENSURE(p.small.ndim() <= p.big.ndim(), ctx.where(), ": ", p.small_name, "=", p.small,
               " has more dims than ", p.big_name, "=", p.big);
  } else {
    OFL_ENSURE(p.small.ndim() + static_cast<int64_t>(axes.size()) == p.big.ndim(), ctx.where(),
               ": ", p.small_name, "=", p.small, " plus axes=", math::AxesToString(raw_axes),
               " gives ", p.small.ndim() + static_cast<int64_t>(axes.size()), " dims, ", p.big_name,
               "=", p.big, " has ", p.big.ndim());
  }
  const Shape expanded = math::ExpandRank(p.small, p.big.ndim(), axes);
  for (int64_t i = 0; i < p.big.ndim(); ++i) {
    OFL_ENSURE(expanded[i] == p.big[i] || expanded[i] == 1, ctx.where(), ": ", p.small_name, "=",
               p.small, " does not broadcast to ", p.big_name, "=", p.big, " (axis ", i, ": ",
               expanded[i], " vs ", p.big[i], ")");
  }
  return axes;
}

Maybe<std::vector<TensorDesc>> InferBroadcastTo(const OpContext& ctx) {
  const TensorDesc& x = ctx.input(0);
  const Shape shape(ctx.attrs.Get<std::vector<int64_t>>("shape"));
  OFL_RETURN_IF_ERROR(CheckBroadcastable(ctx, {x.shape, shape, "x.shape", "shape"}).status());
  return std::vector<TensorDesc>{{shape, x.dtype}};
}

Maybe<std::vector<TensorDesc>> InferSumTo(const OpContext& ctx) {
  const TensorDesc& x = ctx.input(0);
  const Shape shape(ctx.attrs.Get<std::vector<int64_t>>("shape"));
  OFL_RETURN_IF_ERROR(CheckBroadcastable(ctx, {shape, x.shape, "shape", "x.shape"}).status());
  return std::vector<TensorDesc>{{shape, x.dtype}};
}

// The signatures of both ops, seen from the large tensor's axes. Along an
// axis the small tensor has at full size, both split together. Along an
// axis the small tensor broadcasts: broadcast_to reads a B input and writes
// its split; sum_to turns the split into P. Both ops are linear: P -> P.
std::vector<SbpSignature> PairSbp(const OpContext& ctx, const Shape& small, const Shape& big,
                                  bool large_is_output) {
  std::vector<int64_t> axes =
      math::NormalizedAxesUnchecked(ctx.attrs.Get<std::vector<int64_t>>("axes"), big.ndim());
  const std::vector<int64_t> source = math::SourceAxes(small.ndim(), big.ndim(), axes);
  std::vector<SbpSignature> sigs;
  for (int64_t j = 0; j < big.ndim(); ++j) {
    if (big[j] == 1) continue;
    const bool kept = source[j] >= 0 && small[source[j]] == big[j];
    Sbp small_sbp =
        kept ? Sbp::Split(source[j]) : (large_is_output ? Sbp::Broadcast() : Sbp::PartialSum());
    if (large_is_output) {
      sigs.push_back({{small_sbp}, {Sbp::Split(j)}});
    } else {
      sigs.push_back({{Sbp::Split(j)}, {small_sbp}});
    }
  }
  sigs.push_back({{Sbp::Broadcast()}, {Sbp::Broadcast()}});
  sigs.push_back({{Sbp::PartialSum()}, {Sbp::PartialSum()}});
  return sigs;
}

std::vector<SbpSignature> BroadcastToSbp(const OpContext& ctx) {
  return PairSbp(ctx, ctx.input(0).shape, Shape(ctx.attrs.Get<std::vector<int64_t>>("shape")),
                 /*large_is_output=*/true);
}

std::vector<SbpSignature> SumToSbp(const OpContext& ctx) {
  return PairSbp(ctx, Shape(ctx.attrs.Get<std::vector<int64_t>>("shape")), ctx.input(0).shape,
                 /*large_is_output=*/false);
}

// A copy: no arithmetic.
OpCost BroadcastToCost(const OpContext&, const std::vector<TensorDesc>& outs) {
  return {0.0, outs[0].nbytes()};
}

// One add per input element.
OpCost SumToCost(const OpContext& ctx, const std::vector<TensorDesc>& outs) {
  return {static_cast<double>(ctx.input(0).shape.NumElements()), outs[0].nbytes()};
}

// Each op's gradient is the other, back to the input's shape, same axes.
Status PairGrad(GradContext& g, const std::string& adjoint) {
  if (!g.NeedsInputGrad(0)) return Status::OK();
  AttrMap attrs{{"shape", g.InputDesc(0).shape.dims()},
                {"axes", g.attrs().Get<std::vector<int64_t>>("axes")}};
  OFL_ASSIGN_OR_RETURN(std::string dx, g.Emit1(adjoint, {g.OutputGrad(0)}, attrs));
  g.SetInputGrad(0, dx);
  return Status::OK();
}

OFL_REGISTER_OP("broadcast_to")
    .Input("x")
    .Output("out")
    .RequiredAttr("shape", std::vector<int64_t>{})
    .Attr("axes", std::vector<int64_t>{})
    .InferShape(InferBroadcastTo)
    .Sbp(BroadcastToSbp)
    .Cost(BroadcastToCost)
    .Grad([](GradContext& g) { return PairGrad(g, "sum_to"); })
    .Doc("x repeated to `shape` (numpy rules); `axes` names axes of `shape` x lacks.");

OFL_REGISTER_OP("sum_to")
    .Input("x")
    .Output("out")
    .RequiredAttr("shape", std::vector<int64_t>{})
    .Attr("axes", std::vector<int64_t>{})
    .InferShape(InferSumTo)
    .Sbp(SumToSbp)
    .Cost(SumToCost)
    .Grad([](GradContext& g) { return PairGrad(g, "broadcast_to"); })
    .Doc("x summed down to `shape`, a shape it was broadcast from; adjoint of broadcast_to.");

}  // namespace
}  // namespace ofl
