// gather (PyTorch's torch.gather, numpy's take_along_axis) and its backward
// gather_grad. Registration, shape inference, SBP, cost and gradients;
// kernels: gather_cpu.cpp, gather_cuda.cu.
//
//   gather(x, index, axis): out[..., k, ...] = x[..., index[..., k, ...], ...]
//     with `axis` the position of k. index is int32 or int64 with x's rank
//     and x's extent on every other axis; out has index's shape and x's
//     dtype. Every index lies in [0, x.shape[axis]) (a kernel error names
//     the first that does not).
//   gather_grad(index, dy, shape, axis): zeros of `shape`, with dy added at
//     the gathered places (repeated indices add up); the gradient of x
//     (it has none of its own: no second derivatives through gather).
// Both are linear in their value input: x (dy) may be P with index B.
#include "ops/grad.h"
#include "ops/kernel.h"
#include "ops/math/value_infer.h"
#include "ops/op_registry.h"

namespace ofl {

namespace {

bool IsIndexType(DataType t) { return t == DataType::kInt32 || t == DataType::kInt64; }

// `index` against `values` (x, or the `shape` attr for gather_grad): same
// rank, same extents but on the axis. Returns the normalised axis.
Maybe<int64_t> CheckIndex(const OpContext& ctx, const TensorDesc& index, const Shape& values,
                          const std::string& values_name) {
  OFL_ENSURE(IsIndexType(index.dtype), ctx.where(), ": index.dtype=", DataTypeName(index.dtype),
             " is not int32 or int64");
  const int64_t rank = values.ndim();
  int64_t axis = ctx.attrs.Get<int64_t>("axis");
  OFL_ENSURE(axis >= -rank && axis < rank, ctx.where(), ": axis=", axis, " is out of range for ",
             rank, " dims (", values_name, "=", values, ")");
  if (axis < 0) axis += rank;
  OFL_ENSURE(index.shape.ndim() == rank, ctx.where(), ": index.shape=", index.shape, " has ",
             index.shape.ndim(), " dims, ", values_name, "=", values, " has ", rank);
  for (int64_t a = 0; a < rank; ++a) {
    OFL_ENSURE(a == axis || index.shape[a] == values[a], ctx.where(), ": index.shape[", a,
               "]=", index.shape[a], " != ", values_name, "[", a, "]=", values[a], " (only axis ",
               axis, " may differ)");
  }
  return axis;
}

Maybe<std::vector<TensorDesc>> InferGather(const OpContext& ctx) {
  const TensorDesc& x = ctx.input(0);
  OFL_ENSURE(IsValueType(x.dtype), ctx.where(), ": x.dtype=", DataTypeName(x.dtype),
             " is not float32, float64, int32, int64 or bool");
  OFL_RETURN_IF_ERROR(CheckIndex(ctx, ctx.input(1), x.shape, "x.shape").status());
  return std::vector<TensorDesc>{{ctx.input(1).shape, x.dtype}};
}

Maybe<std::vector<TensorDesc>> InferGatherGrad(const OpContext& ctx) {
  const TensorDesc& index = ctx.input(0);
  const TensorDesc& dy = ctx.input(1);
  OFL_ENSURE(IsComputeFloat(dy.dtype), ctx.where(), ": dy.dtype=", DataTypeName(dy.dtype),
             " is not float32 or float64");
  OFL_ENSURE(dy.shape == index.shape, ctx.where(), ": dy.shape=", dy.shape,
             " != index.shape=", index.shape);
  const Shape shape(ctx.attrs.Get<std::vector<int64_t>>("shape"));
  OFL_RETURN_IF_ERROR(CheckIndex(ctx, index, shape, "shape").status());
  return std::vector<TensorDesc>{{shape, dy.dtype}};
}

// Splits of an axis other than `axis` where both tensors have the same
// extent, both B, and (value input P, index B) -> P. `value_input` is the
// position of x (gather) or dy (gather_grad); the index is the other one.
SbpFn GatherSbp(int value_input) {
  return [value_input](const OpContext& ctx) {
    const Shape& index = ctx.input(1 - value_input).shape;
    const int64_t rank = index.ndim();
    int64_t axis = ctx.attrs.Get<int64_t>("axis");
    if (axis < 0) axis += rank;
    std::vector<SbpSignature> sigs;
    for (int64_t a = 0; a < rank; ++a) {
      if (a != axis && index[a] != 1) {
        sigs.push_back({{Sbp::Split(a), Sbp::Split(a)}, {Sbp::Split(a)}});
      }
    }
    sigs.push_back({{Sbp::Broadcast(), Sbp::Broadcast()}, {Sbp::Broadcast()}});
    if (IsFloating(ctx.input(value_input).dtype)) {
      std::vector<Sbp> partial(2, Sbp::Broadcast());
      partial[value_input] = Sbp::PartialSum();
      sigs.push_back({partial, {Sbp::PartialSum()}});
    }
    return sigs;
  };
}

// One read or add per index element; memory: the output.
OpCost GatherCost(const OpContext& ctx, const std::vector<TensorDesc>& outs) {
  const int index_input = ctx.op_type == "gather" ? 1 : 0;
  return {static_cast<double>(ctx.input(index_input).shape.NumElements()), outs[0].nbytes()};
}

Status GatherGrad(GradContext& g) {
  if (!g.NeedsInputGrad(0)) return Status::OK();
  OFL_ASSIGN_OR_RETURN(std::string dx, g.Emit1("gather_grad", {g.Input(1), g.OutputGrad(0)},
                                               {{"shape", g.InputDesc(0).shape.dims()},
                                                {"axis", g.attrs().Get<int64_t>("axis")}}));
  g.SetInputGrad(0, dx);
  return Status::OK();
}

OFL_REGISTER_OP("gather")
    .Input("x")
    .Input("index")
    .Output("out")
    .RequiredAttr("axis", AttrValue(int64_t{0}))
    .InferShape(InferGather)
    .Sbp(GatherSbp(/*value_input=*/0))
    .Cost(GatherCost)
    .Grad(GatherGrad)
    .Doc("out[..., k, ...] = x[..., index[..., k, ...], ...] along `axis` (torch.gather).");

OFL_REGISTER_OP("gather_grad")
    .Input("index")
    .Input("dy")
    .Output("dx")
    .RequiredAttr("shape", AttrValue(std::vector<int64_t>{}))
    .RequiredAttr("axis", AttrValue(int64_t{0}))
    .InferShape(InferGatherGrad)
    .Sbp(GatherSbp(/*value_input=*/1))
    .Cost(GatherCost)
    .Doc("Backward of gather: zeros of `shape` with dy added at the gathered places.");

}  // namespace
}  // namespace ofl
