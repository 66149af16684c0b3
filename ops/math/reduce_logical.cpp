// reduce_any and reduce_all over a list of axes, and argmax and argmin along
// one axis: the reductions that give booleans or indices. Registration,
// shape inference, SBP and cost; no gradient (bool and int64 outputs).
// Kernels: reduce_logical_cpu.cpp, reduce_logical_cuda.cu.
//
//   reduce_any(x, axes=[], keepdims=false): whether any element is nonzero
//     (true); reduce_all: whether every one is. x of any value dtype; empty
//     axes reduce every axis; an empty reduction gives false (any), true (all).
//   argmax(x, axis, keepdims=false), argmin: the int64 index of the first
//     largest (smallest) element along `axis`; a NaN counts as larger and
//     smaller than everything (numpy's and PyTorch's rule). The axis must not
//     be empty.
// SBP: a split on a kept axis stays a split; all-broadcast. A split on a
// reduced axis would need an OR (or an argmax) across ranks, so it is not
// offered: the searcher gathers that axis first.
#include "ops/kernel.h"
#include "ops/math/axes.h"
#include "ops/math/value_infer.h"
#include "ops/op_registry.h"

namespace ofl {

namespace {

// The reduced axes, normalised and sorted (every axis for empty `axes`;
// argmax and argmin name one `axis`).
Maybe<std::vector<int64_t>> AxesOf(const OpContext& ctx) {
  const Shape& x = ctx.input(0).shape;
  if (ctx.attrs.Has("axis")) {
    const int64_t axis = ctx.attrs.Get<int64_t>("axis");
    OFL_ENSURE(axis >= -x.ndim() && axis < x.ndim(), ctx.where(), ": axis=", axis,
               " is out of range for ", x.ndim(), " dims (x.shape=", x, ")");
    return std::vector<int64_t>{axis < 0 ? axis + x.ndim() : axis};
  }
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

Shape ReducedShape(const Shape& x, const std::vector<int64_t>& axes, bool keepdims) {
  std::vector<int64_t> out;
  for (int64_t a = 0; a < x.ndim(); ++a) {
    if (!Contains(axes, a)) {
      out.push_back(x[a]);
    } else if (keepdims) {
      out.push_back(1);
    }
  }
  return Shape(out);
}

Maybe<std::vector<TensorDesc>> InferLogical(const OpContext& ctx) {
  const TensorDesc& x = ctx.input(0);
  OFL_ENSURE(IsValueType(x.dtype), ctx.where(), ": x.dtype=", DataTypeName(x.dtype),
             " is not float32, float64, int32, int64 or bool");
  OFL_ASSIGN_OR_RETURN(std::vector<int64_t> axes, AxesOf(ctx));
  return std::vector<TensorDesc>{
      {ReducedShape(x.shape, axes, ctx.attrs.Get<bool>("keepdims")), DataType::kBool}};
}

Maybe<std::vector<TensorDesc>> InferArg(const OpContext& ctx) {
  const TensorDesc& x = ctx.input(0);
  OFL_ENSURE(x.dtype != DataType::kBool && IsValueType(x.dtype), ctx.where(),
             ": x.dtype=", DataTypeName(x.dtype), " is not float32, float64, int32 or int64");
  OFL_ENSURE(x.shape.ndim() > 0, ctx.where(), ": x is a scalar (shape ()); it has no axis");
  OFL_ASSIGN_OR_RETURN(std::vector<int64_t> axes, AxesOf(ctx));
  OFL_ENSURE(x.shape[axes[0]] > 0, ctx.where(), ": axis ", axes[0], " of x.shape=", x.shape,
             " is empty; it has no largest or smallest element");
  return std::vector<TensorDesc>{
      {ReducedShape(x.shape, axes, ctx.attrs.Get<bool>("keepdims")), DataType::kInt64}};
}

SbpFn KeptAxisSbp() {
  return [](const OpContext& ctx) {
    const Shape& x = ctx.input(0).shape;
    std::vector<SbpSignature> sigs;
    Maybe<std::vector<int64_t>> axes = AxesOf(ctx);
    if (axes.ok()) {
      const bool keepdims = ctx.attrs.Get<bool>("keepdims");
      int64_t out_axis = 0;
      for (int64_t a = 0; a < x.ndim(); ++a) {
        const bool reduced = Contains(axes.value(), a);
        if (!reduced && x[a] != 1) sigs.push_back({{Sbp::Split(a)}, {Sbp::Split(out_axis)}});
        if (!reduced || keepdims) ++out_axis;
      }
    }
    sigs.push_back({{Sbp::Broadcast()}, {Sbp::Broadcast()}});
    return sigs;
  };
}

// One test (any, all) or compare (argmax, argmin) per input element.
OpCost ReduceLogicalCost(const OpContext& ctx, const std::vector<TensorDesc>& outs) {
  return {static_cast<double>(ctx.input(0).shape.NumElements()), outs[0].nbytes()};
}

bool RegisterLogical(const std::string& name, const std::string& doc) {
  OpRegistry::Register(name)
      .Input("x")
      .Output("out")
      .Attr("axes", std::vector<int64_t>{})
      .Attr("keepdims", AttrValue(false))
      .InferShape(InferLogical)
      .Sbp(KeptAxisSbp())
      .Cost(ReduceLogicalCost)
      .Doc(doc);
  return true;
}

bool RegisterArg(const std::string& name, const std::string& doc) {
  OpRegistry::Register(name)
      .Input("x")
      .Output("out")
      .RequiredAttr("axis", AttrValue(int64_t{0}))
      .Attr("keepdims", AttrValue(false))
      .InferShape(InferArg)
      .Sbp(KeptAxisSbp())
      .Cost(ReduceLogicalCost)
      .Doc(doc);
  return true;
}

const bool kRegistered =
    RegisterLogical("reduce_any",
                    "Whether any element of x over `axes` (empty: every axis) "
                    "is nonzero; a bool tensor.") &&
    RegisterLogical("reduce_all",
                    "Whether every element of x over `axes` (empty: every "
                    "axis) is nonzero; a bool tensor.") &&
    RegisterArg("argmax",
                "The int64 index of the first largest element of x along `axis` "
                "(NaN counts as largest).") &&
    RegisterArg("argmin",
                "The int64 index of the first smallest element of x along `axis` "
                "(NaN counts as smallest).");

}  // namespace
}  // namespace ofl
