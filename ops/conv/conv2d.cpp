// conv2d and its two backward ops, conv2d_grad_input and conv2d_grad_weight:
// registration, shape and dtype inference, 1-D SBP signatures, cost and
// gradient rules. Kernels: conv2d_cpu.cpp (im2col + BLAS gemm).
//
//   conv2d(x [N, C, H, W], weight [O, C, kh, kw]) -> y [N, O, Ho, Wo]
//   Ho = floor((H + 2 * padding[0] - dilation[0] * (kh - 1) - 1) / stride[0]) + 1
//   conv2d_grad_input(dy, weight; input_shape)  -> dx, the adjoint of x -> conv2d(x, weight)
//   conv2d_grad_weight(x, dy; weight_shape)     -> dweight, the adjoint of w -> conv2d(x, w)
//
// No groups and no bias (bias is a separate op). conv2d is bilinear in
// (x, weight), so all three ops have gradients made of these three ops.
#include "oneflow_lite/core/checked_math.h"
#include "ops/conv/conv_geometry.h"
#include "ops/grad.h"
#include "ops/op_registry.h"

namespace ofl {

namespace {

using Ints = std::vector<int64_t>;

std::string Str(const Ints& v) { return AttrToString(AttrValue(v)); }

// A list attr of `size` values, each >= `min`.
Status CheckListAttr(const OpContext& ctx, const std::string& name, size_t size, int64_t min) {
  const Ints& v = ctx.attrs.Get<Ints>(name);
  OFL_ENSURE(v.size() == size, ctx.where(), ": attribute '", name, "'=", Str(v), " must have ",
             size, " values");
  for (int64_t e : v) {
    OFL_ENSURE(e >= min, ctx.where(), ": attribute '", name, "'=", Str(v),
               " must have values >= ", min);
  }
  return Status::OK();
}

Status CheckConvAttrs(const OpContext& ctx) {
  OFL_RETURN_IF_ERROR(CheckListAttr(ctx, "stride", 2, 1));
  OFL_RETURN_IF_ERROR(CheckListAttr(ctx, "padding", 2, 0));
  OFL_RETURN_IF_ERROR(CheckListAttr(ctx, "dilation", 2, 1));
  return Status::OK();
}

// A 4-D shape given by name (an input or a shape attr). Batch and channel
// extents may be 0 (a rank's share of a split smaller than its group).
Status CheckShape4D(const OpContext& ctx, const std::string& name, const Shape& s) {
  OFL_ENSURE(s.ndim() == 4, ctx.where(), ": ", name, " must be 4-D, got shape ", s);
  for (int64_t d : s.dims()) {
    OFL_ENSURE(d >= 0, ctx.where(), ": ", name, "=", s, " has a negative extent");
  }
  return Status::OK();
}

// The inputs are float32 or float64 and share one dtype.
Status CheckFloatInputs(const OpContext& ctx, const std::vector<std::string>& names) {
  DataType first = ctx.input(0).dtype;
  OFL_ENSURE(IsComputeFloat(first), ctx.where(), ": ", names[0], ".dtype=", DataTypeName(first),
             " is not float32 or float64");
  for (int i = 1; i < ctx.num_inputs(); ++i) {
    OFL_ENSURE(ctx.input(i).dtype == first, ctx.where(), ": ", names[i],
               ".dtype=", DataTypeName(ctx.input(i).dtype), " != ", names[0],
               ".dtype=", DataTypeName(first));
  }
  return Status::OK();
}

// Shapes of x and weight agree, and the output is not empty.
Maybe<Conv2dGeometry> CheckGeometry(const OpContext& ctx, const std::string& x_name, const Shape& x,
                                    const std::string& w_name, const Shape& w) {
  OFL_RETURN_IF_ERROR(CheckShape4D(ctx, x_name, x));
  OFL_RETURN_IF_ERROR(CheckShape4D(ctx, w_name, w));
  OFL_RETURN_IF_ERROR(CheckConvAttrs(ctx));
  OFL_ENSURE(w[2] >= 1 && w[3] >= 1, ctx.where(), ": ", w_name, "=", w,
             " has an empty kernel window");
  OFL_ENSURE(x[1] == w[1], ctx.where(), ": ", x_name, "[1]=", x[1], " (input channels) != ", w_name,
             "[1]=", w[1]);
  Conv2dGeometry g = Conv2dGeometry::Make(x, w, ctx.attrs);
  OFL_ENSURE(g.out_h < kInt64Max && g.out_w < kInt64Max, ctx.where(), ": ", x_name, "=", x,
             " with padding=", Str(ctx.attrs.Get<Ints>("padding")),
             " has an output extent more than int64 can hold");
  OFL_ENSURE(g.out_h >= 1 && g.out_w >= 1, ctx.where(), ": ", x_name, "=", x,
             " is too small for kernel (", g.kernel_h, ", ", g.kernel_w,
             ") with padding=", Str(ctx.attrs.Get<Ints>("padding")),
             " and dilation=", Str(ctx.attrs.Get<Ints>("dilation")), ": the output would be empty");
  return g;
}

Maybe<Shape> ShapeAttr(const OpContext& ctx, const std::string& name) {
  const Ints& v = ctx.attrs.Get<Ints>(name);
  OFL_ENSURE(v.size() == 4, ctx.where(), ": attribute '", name, "'=", Str(v),
             " must have 4 values");
  return Shape(v);
}

Maybe<std::vector<TensorDesc>> InferConv2d(const OpContext& ctx) {
  OFL_RETURN_IF_ERROR(CheckFloatInputs(ctx, {"x", "weight"}));
  OFL_ASSIGN_OR_RETURN(Conv2dGeometry g, CheckGeometry(ctx, "x.shape", ctx.input(0).shape,
                                                       "weight.shape", ctx.input(1).shape));
  return std::vector<TensorDesc>{{g.output_shape(), ctx.input(0).dtype}};
}

Maybe<std::vector<TensorDesc>> InferConv2dGradInput(const OpContext& ctx) {
  OFL_RETURN_IF_ERROR(CheckFloatInputs(ctx, {"dy", "weight"}));
  OFL_ASSIGN_OR_RETURN(Shape x, ShapeAttr(ctx, "input_shape"));
  const Shape& dy = ctx.input(0).shape;
  OFL_ASSIGN_OR_RETURN(Conv2dGeometry g,
                       CheckGeometry(ctx, "input_shape", x, "weight.shape", ctx.input(1).shape));
  OFL_ENSURE(dy == g.output_shape(), ctx.where(), ": dy.shape=", dy, " != ", g.output_shape(),
             ", the output shape of conv2d for input_shape=", x,
             " and weight.shape=", ctx.input(1).shape);
  return std::vector<TensorDesc>{{x, ctx.input(0).dtype}};
}

Maybe<std::vector<TensorDesc>> InferConv2dGradWeight(const OpContext& ctx) {
  OFL_RETURN_IF_ERROR(CheckFloatInputs(ctx, {"x", "dy"}));
  OFL_ASSIGN_OR_RETURN(Shape w, ShapeAttr(ctx, "weight_shape"));
  const Shape& dy = ctx.input(1).shape;
  OFL_ASSIGN_OR_RETURN(Conv2dGeometry g,
                       CheckGeometry(ctx, "x.shape", ctx.input(0).shape, "weight_shape", w));
  OFL_ENSURE(dy == g.output_shape(), ctx.where(), ": dy.shape=", dy, " != ", g.output_shape(),
             ", the output shape of conv2d for x.shape=", ctx.input(0).shape,
             " and weight_shape=", w);
  return std::vector<TensorDesc>{{w, ctx.input(0).dtype}};
}

// Signatures written as (in0, in1 -> out); the ops are bilinear, so a
// partial sum in one input with the other broadcast gives a partial sum.
std::vector<SbpSignature> Bilinear(std::vector<SbpSignature> splits) {
  Sbp b = Sbp::Broadcast(), p = Sbp::PartialSum();
  splits.push_back({{b, b}, {b}});
  splits.push_back({{p, b}, {p}});
  splits.push_back({{b, p}, {p}});
  return splits;
}

// y[n,o] = sum_c x[n,c] * w[o,c]: N and O split locally, C is contracted.
std::vector<SbpSignature> Conv2dSbp(const OpContext&) {
  return Bilinear({{{Sbp::Split(0), Sbp::Broadcast()}, {Sbp::Split(0)}},
                   {{Sbp::Broadcast(), Sbp::Split(0)}, {Sbp::Split(1)}},
                   {{Sbp::Split(1), Sbp::Split(1)}, {Sbp::PartialSum()}}});
}

// dx[n,c] = sum_o dy[n,o] * w[o,c]: N and C split locally, O is contracted.
std::vector<SbpSignature> Conv2dGradInputSbp(const OpContext&) {
  return Bilinear({{{Sbp::Split(0), Sbp::Broadcast()}, {Sbp::Split(0)}},
                   {{Sbp::Broadcast(), Sbp::Split(1)}, {Sbp::Split(1)}},
                   {{Sbp::Split(1), Sbp::Split(0)}, {Sbp::PartialSum()}}});
}

// dw[o,c] = sum_n dy[n,o] * x[n,c]: O and C split locally, N is contracted.
std::vector<SbpSignature> Conv2dGradWeightSbp(const OpContext&) {
  return Bilinear({{{Sbp::Broadcast(), Sbp::Split(1)}, {Sbp::Split(0)}},
                   {{Sbp::Split(1), Sbp::Broadcast()}, {Sbp::Split(1)}},
                   {{Sbp::Split(0), Sbp::Split(0)}, {Sbp::PartialSum()}}});
}

OpCost ConvCost(const Shape& x, const Shape& w, const OpContext& ctx,
                const std::vector<TensorDesc>& outs) {
  return {Conv2dGeometry::Make(x, w, ctx.attrs).flops(), outs[0].nbytes()};
}

OpCost Conv2dCost(const OpContext& ctx, const std::vector<TensorDesc>& outs) {
  return ConvCost(ctx.input(0).shape, ctx.input(1).shape, ctx, outs);
}
OpCost Conv2dGradInputCost(const OpContext& ctx, const std::vector<TensorDesc>& outs) {
  return ConvCost(outs[0].shape, ctx.input(1).shape, ctx, outs);
}
OpCost Conv2dGradWeightCost(const OpContext& ctx, const std::vector<TensorDesc>& outs) {
  return ConvCost(ctx.input(0).shape, outs[0].shape, ctx, outs);
}

// stride, padding, dilation of the forward op, plus `extra`.
AttrMap ConvAttrs(const GradContext& g, const std::string& extra_name = "",
                  const Shape& extra = Shape()) {
  AttrMap a;
  for (const char* name : {"stride", "padding", "dilation"}) a.Set(name, g.attrs().Raw(name));
  if (!extra_name.empty()) a.Set(extra_name, extra.dims());
  return a;
}

// y = conv(x, w): dx = grad_input(dy, w), dw = grad_weight(x, dy).
Status Conv2dGrad(GradContext& g) {
  const std::string dy = g.OutputGrad(0);
  if (g.NeedsInputGrad(0)) {
    OFL_ASSIGN_OR_RETURN(std::string dx,
                         g.Emit1("conv2d_grad_input", {dy, g.Input(1)},
                                 ConvAttrs(g, "input_shape", g.InputDesc(0).shape)));
    g.SetInputGrad(0, dx);
  }
  if (g.NeedsInputGrad(1)) {
    OFL_ASSIGN_OR_RETURN(std::string dw,
                         g.Emit1("conv2d_grad_weight", {g.Input(0), dy},
                                 ConvAttrs(g, "weight_shape", g.InputDesc(1).shape)));
    g.SetInputGrad(1, dw);
  }
  return Status::OK();
}

// z = grad_input(dy, w) = conv(., w)^T dy, so <gz, z> = <conv(gz, w), dy>:
// d dy = conv(gz, w), d w = grad_weight(gz, dy).
Status Conv2dGradInputGrad(GradContext& g) {
  const std::string gz = g.OutputGrad(0);
  if (g.NeedsInputGrad(0)) {
    OFL_ASSIGN_OR_RETURN(std::string ddy, g.Emit1("conv2d", {gz, g.Input(1)}, ConvAttrs(g)));
    g.SetInputGrad(0, ddy);
  }
  if (g.NeedsInputGrad(1)) {
    OFL_ASSIGN_OR_RETURN(std::string dw,
                         g.Emit1("conv2d_grad_weight", {gz, g.Input(0)},
                                 ConvAttrs(g, "weight_shape", g.InputDesc(1).shape)));
    g.SetInputGrad(1, dw);
  }
  return Status::OK();
}

// z = grad_weight(x, dy), <gz, z> = <conv(x, gz), dy>:
// d x = grad_input(dy, gz), d dy = conv(x, gz).
Status Conv2dGradWeightGrad(GradContext& g) {
  const std::string gz = g.OutputGrad(0);
  if (g.NeedsInputGrad(0)) {
    OFL_ASSIGN_OR_RETURN(std::string dx,
                         g.Emit1("conv2d_grad_input", {g.Input(1), gz},
                                 ConvAttrs(g, "input_shape", g.InputDesc(0).shape)));
    g.SetInputGrad(0, dx);
  }
  if (g.NeedsInputGrad(1)) {
    OFL_ASSIGN_OR_RETURN(std::string ddy, g.Emit1("conv2d", {g.Input(0), gz}, ConvAttrs(g)));
    g.SetInputGrad(1, ddy);
  }
  return Status::OK();
}

const Ints kOnes = {1, 1};
const Ints kZeros = {0, 0};

OFL_REGISTER_OP("conv2d")
    .Input("x")
    .Input("weight")
    .Output("y")
    .Attr("stride", kOnes)
    .Attr("padding", kZeros)
    .Attr("dilation", kOnes)
    .InferShape(InferConv2d)
    .Sbp(Conv2dSbp)
    .Cost(Conv2dCost)
    .Grad(Conv2dGrad)
    .Doc(
        "2-D convolution (cross-correlation) of x [N, C, H, W] with weight [O, C, kh, kw], "
        "zero padding, no groups, no bias.");

OFL_REGISTER_OP("conv2d_grad_input")
    .Input("dy")
    .Input("weight")
    .Output("dx")
    .Attr("stride", kOnes)
    .Attr("padding", kZeros)
    .Attr("dilation", kOnes)
    .RequiredAttr("input_shape", Ints{})
    .InferShape(InferConv2dGradInput)
    .Sbp(Conv2dGradInputSbp)
    .Cost(Conv2dGradInputCost)
    .Grad(Conv2dGradInputGrad)
    .Doc("Gradient of conv2d with respect to x (of shape input_shape), from dy and weight.");

OFL_REGISTER_OP("conv2d_grad_weight")
    .Input("x")
    .Input("dy")
    .Output("dweight")
    .Attr("stride", kOnes)
    .Attr("padding", kZeros)
    .Attr("dilation", kOnes)
    .RequiredAttr("weight_shape", Ints{})
    .InferShape(InferConv2dGradWeight)
    .Sbp(Conv2dGradWeightSbp)
    .Cost(Conv2dGradWeightCost)
    .Grad(Conv2dGradWeightGrad)
    .Doc("Gradient of conv2d with respect to weight (of shape weight_shape), from x and dy.");

}  // namespace
}  // namespace ofl
