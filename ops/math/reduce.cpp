// reduce_sum and reduce_mean over a list of axes: registration, shape
// inference, SBP, cost and gradient. Kernels are in reduce_cpu.cpp.
//
//   reduce_sum(x, axes=[], keepdims=false), reduce_mean(...): `axes` may be
//   negative; empty means every axis; a repeated or out-of-range axis is an
//   error. keepdims keeps each reduced axis with size 1.
// Gradients broadcast dy back with broadcast_to(shape=x.shape, axes=reduced
// axes when keepdims is false), so no reshape op is needed.
#include "ops/grad.h"
#include "ops/kernel.h"
#include "ops/math/axes.h"
#include "ops/op_registry.h"

namespace ofl {

namespace {

// The reduced axes of x, normalised and sorted (every axis for empty `axes`).
Maybe<std::vector<int64_t>> ReducedAxes(const OpContext& ctx) {
  const Shape& x = ctx.input(0).shape;
  OFL_ASSIGN_OR_RETURN(std::vector<int64_t> axes,
                       math::NormalizeAxes(ctx.attrs.Get<std::vector<int64_t>>("axes"), x.ndim(),
                                           ctx.where(), "x.shape=" + x.ToString()));
  if (axes.empty()) {
    for (int64_t a = 0; a < x.ndim(); ++a) axes.push_back(a);
  }
  return axes;
}

bool Contains(const std::vector<int64_t>& sorted, int64_t a) {
  return std::binary_search(sorted.begin(), sorted.end(), a);
}

Maybe<std::vector<TensorDesc>> InferReduce(const OpContext& ctx) {
  const TensorDesc& x = ctx.input(0);
  OFL_ENSURE(IsComputeFloat(x.dtype), ctx.where(), ": x.dtype=", DataTypeName(x.dtype),
             " is not float32 or float64");
  OFL_ASSIGN_OR_RETURN(std::vector<int64_t> axes, ReducedAxes(ctx));
  const bool keepdims = ctx.attrs.Get<bool>("keepdims");
  std::vector<int64_t> out;
  for (int64_t a = 0; a < x.shape.ndim(); ++a) {
    if (!Contains(axes, a)) {
      out.push_back(x.shape[a]);
    } else if (keepdims) {
      out.push_back(1);
    }
  }
  return std::vector<TensorDesc>{{Shape(out), x.dtype}};
}

// A split on a kept axis stays a split (of the output's matching axis). A
// split on a reduced axis gives P: reduce_mean's kernel divides by the
// logical count (KernelContext::input_logical_shape), so the ranks' partial
// means sum to the mean. Both are linear.
SbpFn ReduceSbp() {
  return [](const OpContext& ctx) {
    const Shape& x = ctx.input(0).shape;
    const std::vector<int64_t> axes = ReducedAxes(ctx).value();
    const bool keepdims = ctx.attrs.Get<bool>("keepdims");
    std::vector<SbpSignature> sigs;
    int64_t out_axis = 0;
    for (int64_t a = 0; a < x.ndim(); ++a) {
      const bool reduced = Contains(axes, a);
      if (x[a] != 1) {
        if (!reduced) {
          sigs.push_back({{Sbp::Split(a)}, {Sbp::Split(out_axis)}});
        } else {
          sigs.push_back({{Sbp::Split(a)}, {Sbp::PartialSum()}});
        }
      }
      if (!reduced || keepdims) ++out_axis;
    }
    sigs.push_back({{Sbp::Broadcast()}, {Sbp::Broadcast()}});
    sigs.push_back({{Sbp::PartialSum()}, {Sbp::PartialSum()}});
    return sigs;
  };
}

// reduce_sum: one add per input element. reduce_mean: that plus one
// multiply per output element.
CostFn ReduceCost(bool is_sum) {
  return [is_sum](const OpContext& ctx, const std::vector<TensorDesc>& outs) {
    double flops = static_cast<double>(ctx.input(0).shape.NumElements());
    if (!is_sum) flops += static_cast<double>(outs[0].shape.NumElements());
    return OpCost{flops, outs[0].nbytes()};
  };
}

GradFn ReduceGrad(bool is_sum) {
  return [is_sum](GradContext& g) -> Status {
    if (!g.NeedsInputGrad(0)) return Status::OK();
    OFL_ASSIGN_OR_RETURN(std::vector<int64_t> axes, ReducedAxes(g.forward()));
    const Shape& x = g.InputDesc(0).shape;
    std::string dy = g.OutputGrad(0);
    if (!is_sum) {
      int64_t count = 1;
      for (int64_t a : axes) count *= x[a];
      const double scale = count > 0 ? 1.0 / static_cast<double>(count) : 0.0;
      OFL_ASSIGN_OR_RETURN(dy, g.Emit1("scalar_mul", {dy}, {{"value", scale}}));
    }
    const bool keepdims = g.attrs().Get<bool>("keepdims");
    AttrMap attrs{{"shape", x.dims()}, {"axes", keepdims ? std::vector<int64_t>{} : axes}};
    OFL_ASSIGN_OR_RETURN(std::string dx, g.Emit1("broadcast_to", {dy}, attrs));
    g.SetInputGrad(0, dx);
    return Status::OK();
  };
}

OFL_REGISTER_OP("reduce_sum")
    .Input("x")
    .Output("out")
    .Attr("axes", std::vector<int64_t>{})
    .Attr("keepdims", AttrValue(false))
    .InferShape(InferReduce)
    .Sbp(ReduceSbp())
    .Cost(ReduceCost(/*is_sum=*/true))
    .Grad(ReduceGrad(/*is_sum=*/true))
    .Doc("Sum of x over `axes` (empty: every axis), keeping them as size 1 if keepdims.");

OFL_REGISTER_OP("reduce_mean")
    .Input("x")
    .Output("out")
    .Attr("axes", std::vector<int64_t>{})
    .Attr("keepdims", AttrValue(false))
    .InferShape(InferReduce)
    .Sbp(ReduceSbp())
    .Cost(ReduceCost(/*is_sum=*/false))
    .Grad(ReduceGrad(/*is_sum=*/false))
    .Doc("Mean of x over `axes` (empty: every axis), keeping them as size 1 if keepdims.");

}  // namespace
}  // namespace ofl
