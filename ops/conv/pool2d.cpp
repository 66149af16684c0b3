// max_pool2d, avg_pool2d and their backward ops max_pool2d_grad and
// avg_pool2d_grad on NCHW tensors: registration, inference, 1-D SBP, cost
// and gradient rules. Kernels: pool2d_cpu.cpp.
//
//   attrs: kernel_size [kh, kw] (required), stride (empty = kernel_size),
//          padding [ph, pw] with ph <= kh / 2 and pw <= kw / 2
//   Ho = floor((H + 2 * ph - kh) / stride[0]) + 1
//   max pool ignores the padding; avg pool counts padded zeros in the divisor
//   (PyTorch's count_include_pad=True), so every window divides by kh * kw.
//   max_pool2d_grad(x, y, dy): dy goes to the first maximum of each window.
//   avg_pool2d_grad(x, dy): x is read only for its shape.
#include "oneflow_lite/core/checked_math.h"
#include "ops/conv/conv_geometry.h"
#include "ops/grad.h"
#include "ops/op_registry.h"

namespace ofl {

namespace {

using Ints = std::vector<int64_t>;

std::string Str(const Ints& v) { return AttrToString(AttrValue(v)); }

Status CheckListAttr(const OpContext& ctx, const std::string& name, int64_t min) {
  const Ints& v = ctx.attrs.Get<Ints>(name);
  OFL_ENSURE(v.size() == 2, ctx.where(), ": attribute '", name, "'=", Str(v),
             " must have 2 values");
  for (int64_t e : v) {
    OFL_ENSURE(e >= min, ctx.where(), ": attribute '", name, "'=", Str(v),
               " must have values >= ", min);
  }
  return Status::OK();
}

// x is a float 4-D tensor and the attrs are valid; returns the output shape.
Maybe<Shape> InferPoolOutput(const OpContext& ctx) {
  const TensorDesc& x = ctx.input(0);
  OFL_ENSURE(x.shape.ndim() == 4, ctx.where(), ": x.shape must be 4-D (N, C, H, W), got ", x.shape);
  OFL_ENSURE(IsComputeFloat(x.dtype), ctx.where(), ": x.dtype=", DataTypeName(x.dtype),
             " is not float32 or float64");
  OFL_RETURN_IF_ERROR(CheckListAttr(ctx, "kernel_size", 1));
  if (!ctx.attrs.Get<Ints>("stride").empty()) OFL_RETURN_IF_ERROR(CheckListAttr(ctx, "stride", 1));
  OFL_RETURN_IF_ERROR(CheckListAttr(ctx, "padding", 0));
  const Ints& kernel = ctx.attrs.Get<Ints>("kernel_size");
  const Ints& padding = ctx.attrs.Get<Ints>("padding");
  OFL_ENSURE(padding[0] <= kernel[0] / 2 && padding[1] <= kernel[1] / 2, ctx.where(),
             ": padding=", Str(padding), " must be at most half of kernel_size=", Str(kernel));
  OFL_ENSURE(MulInt64(kernel[0], kernel[1]), ctx.where(), ": kernel_size=", Str(kernel), " has ",
             ProductText(kernel), " elements, more than int64 can hold");
  Pool2dGeometry g = Pool2dGeometry::Make(x.shape, ctx.attrs);
  OFL_ENSURE(g.out_h < kInt64Max && g.out_w < kInt64Max, ctx.where(), ": x.shape=", x.shape,
             " with kernel_size=", Str(kernel), " and padding=", Str(padding),
             " has an output extent more than int64 can hold");
  OFL_ENSURE(g.out_h >= 1 && g.out_w >= 1, ctx.where(), ": x.shape=", x.shape,
             " is smaller than kernel_size=", Str(kernel), " with padding=", Str(padding));
  return Shape({x.shape[0], x.shape[1], g.out_h, g.out_w});
}

Maybe<std::vector<TensorDesc>> InferPool(const OpContext& ctx) {
  OFL_ASSIGN_OR_RETURN(Shape y, InferPoolOutput(ctx));
  return std::vector<TensorDesc>{{y, ctx.input(0).dtype}};
}

// Inputs after x (y and/or dy) have the pooled shape and x's dtype.
Maybe<std::vector<TensorDesc>> InferPoolGrad(const OpContext& ctx,
                                             const std::vector<std::string>& names) {
  OFL_ASSIGN_OR_RETURN(Shape y, InferPoolOutput(ctx));
  for (int i = 1; i < ctx.num_inputs(); ++i) {
    const TensorDesc& d = ctx.input(i);
    OFL_ENSURE(d.shape == y, ctx.where(), ": ", names[i], ".shape=", d.shape, " != ", y,
               ", the pooled shape of x.shape=", ctx.input(0).shape);
    OFL_ENSURE(d.dtype == ctx.input(0).dtype, ctx.where(), ": ", names[i],
               ".dtype=", DataTypeName(d.dtype), " != x.dtype=", DataTypeName(ctx.input(0).dtype));
  }
  return std::vector<TensorDesc>{ctx.input(0)};
}

// Every input and the output split alike on N or C, or all broadcast;
// linear ops also take a partial sum in their last input (the others B).
SbpFn PoolSbp(bool linear) {
  return [linear](const OpContext& ctx) {
    const int n = ctx.num_inputs();
    std::vector<SbpSignature> sigs;
    for (int64_t axis : {0, 1}) {
      sigs.push_back({std::vector<Sbp>(n, Sbp::Split(axis)), {Sbp::Split(axis)}});
    }
    sigs.push_back({std::vector<Sbp>(n, Sbp::Broadcast()), {Sbp::Broadcast()}});
    if (linear) {
      std::vector<Sbp> ins(n, Sbp::Broadcast());
      ins.back() = Sbp::PartialSum();
      sigs.push_back({ins, {Sbp::PartialSum()}});
    }
    return sigs;
  };
}

// One compare (max) or add (avg, with the divide in place of one add) per
// window element, and the same for the backward's scan or scatter.
OpCost PoolCost(const OpContext& ctx, const std::vector<TensorDesc>& outs) {
  Pool2dGeometry g = Pool2dGeometry::Make(ctx.input(0).shape, ctx.attrs);
  double flops = static_cast<double>(g.planes) * static_cast<double>(g.out_h * g.out_w) *
                 static_cast<double>(g.window());
  return {flops, outs[0].nbytes()};
}

Status MaxPoolGrad(GradContext& g) {
  if (!g.NeedsInputGrad(0)) return Status::OK();
  OFL_ASSIGN_OR_RETURN(
      std::string dx,
      g.Emit1("max_pool2d_grad", {g.Input(0), g.Output(0), g.OutputGrad(0)}, g.attrs()));
  g.SetInputGrad(0, dx);
  return Status::OK();
}

Status AvgPoolGrad(GradContext& g) {
  if (!g.NeedsInputGrad(0)) return Status::OK();
  OFL_ASSIGN_OR_RETURN(std::string dx,
                       g.Emit1("avg_pool2d_grad", {g.Input(0), g.OutputGrad(0)}, g.attrs()));
  g.SetInputGrad(0, dx);
  return Status::OK();
}

// avg_pool2d_grad is the adjoint of the linear map avg_pool2d, so its own
// gradient with respect to dy is avg_pool2d; x only gave the shape.
Status AvgPoolGradGrad(GradContext& g) {
  if (!g.NeedsInputGrad(1)) return Status::OK();
  OFL_ASSIGN_OR_RETURN(std::string ddy, g.Emit1("avg_pool2d", {g.OutputGrad(0)}, g.attrs()));
  g.SetInputGrad(1, ddy);
  return Status::OK();
}

OFL_REGISTER_OP("max_pool2d")
    .Input("x")
    .Output("y")
    .RequiredAttr("kernel_size", Ints{})
    .Attr("stride", Ints{})
    .Attr("padding", Ints{0, 0})
    .InferShape(InferPool)
    .Sbp(PoolSbp(false))
    .Cost(PoolCost)
    .Grad(MaxPoolGrad)
    .Doc("2-D max pooling over NCHW windows; the padding never wins.");

OFL_REGISTER_OP("avg_pool2d")
    .Input("x")
    .Output("y")
    .RequiredAttr("kernel_size", Ints{})
    .Attr("stride", Ints{})
    .Attr("padding", Ints{0, 0})
    .InferShape(InferPool)
    .Sbp(PoolSbp(true))
    .Cost(PoolCost)
    .Grad(AvgPoolGrad)
    .Doc("2-D average pooling over NCHW windows; padded zeros count in the divisor.");

OFL_REGISTER_OP("max_pool2d_grad")
    .Input("x")
    .Input("y")
    .Input("dy")
    .Output("dx")
    .RequiredAttr("kernel_size", Ints{})
    .Attr("stride", Ints{})
    .Attr("padding", Ints{0, 0})
    .InferShape([](const OpContext& ctx) {
      return InferPoolGrad(ctx, {"x", "y", "dy"});
    })
    .Sbp(PoolSbp(true))
    .Cost(PoolCost)
    .Doc("Gradient of max_pool2d: each dy goes to the first maximum of its window of x.");

OFL_REGISTER_OP("avg_pool2d_grad")
    .Input("x")
    .Input("dy")
    .Output("dx")
    .RequiredAttr("kernel_size", Ints{})
    .Attr("stride", Ints{})
    .Attr("padding", Ints{0, 0})
    .InferShape([](const OpContext& ctx) {
      return InferPoolGrad(ctx, {"x", "dy"});
    })
    .Sbp(PoolSbp(true))
    .Cost(PoolCost)
    .Grad(AvgPoolGradGrad)
    .Doc("Gradient of avg_pool2d: each dy spread evenly over its window (x gives the shape).");

}  // namespace
}  // namespace ofl
