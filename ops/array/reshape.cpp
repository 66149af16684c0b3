// reshape and flatten: registration, inference, 1-D SBP, cost and gradient
// (each is a reshape back to the input's shape). The kernels (reshape_cpu.cpp)
// copy the bytes; any dtype works.
//
//   reshape(x; shape)               shape may hold one -1, inferred from the element count
//   flatten(x; start_dim, end_dim)  merges axes start_dim..end_dim (negatives count from the end)
//
// SBP: the data order never changes, so a split of a leading axis that the
// reshape leaves unchanged (and every axis before it unchanged too) stays the
// same split; on a known mesh, a split axis may also merge or split when
// the mesh divides both extents (AppendMergeSplits); all-B; P -> P (the op
// is linear).
#include <algorithm>

#include "ops/grad.h"
#include "ops/op_registry.h"

namespace ofl {

namespace {

using Ints = std::vector<int64_t>;

std::string Str(const Ints& v) { return AttrToString(AttrValue(v)); }

Maybe<std::vector<TensorDesc>> InferReshape(const OpContext& ctx) {
  const TensorDesc& x = ctx.input(0);
  const Ints& target = ctx.attrs.Get<Ints>("shape");
  int64_t known = 1;
  int infer_axis = -1;
  for (size_t i = 0; i < target.size(); ++i) {
    if (target[i] == -1) {
      OFL_ENSURE(infer_axis < 0, ctx.where(), ": shape=", Str(target), " may hold at most one -1");
      infer_axis = static_cast<int>(i);
    } else {
      OFL_ENSURE(target[i] >= 0, ctx.where(), ": shape=", Str(target), " has the negative extent ",
                 target[i], " (only -1 is allowed, once)");
      known *= target[i];
    }
  }
  Ints dims = target;
  const int64_t numel = x.shape.NumElements();
  if (infer_axis >= 0) {
    OFL_ENSURE(known > 0 && numel % known == 0, ctx.where(), ": cannot reshape x.shape=", x.shape,
               " (", numel, " elements) into shape=", Str(target));
    dims[infer_axis] = numel / known;
  }
  OFL_ENSURE(Shape(dims).NumElements() == numel, ctx.where(), ": cannot reshape x.shape=", x.shape,
             " (", numel, " elements) into shape=", Str(target), " (", Shape(dims).NumElements(),
             " elements)");
  return std::vector<TensorDesc>{{Shape(dims), x.dtype}};
}

Maybe<std::vector<TensorDesc>> InferFlatten(const OpContext& ctx) {
  const TensorDesc& x = ctx.input(0);
  const int64_t ndim = x.shape.ndim();
  OFL_ASSIGN_OR_RETURN(int64_t start, NormalizeAxis(ctx.attrs.Get<int64_t>("start_dim"), ndim,
                                                    ctx.where() + ": start_dim"));
  OFL_ASSIGN_OR_RETURN(int64_t end, NormalizeAxis(ctx.attrs.Get<int64_t>("end_dim"), ndim,
                                                  ctx.where() + ": end_dim"));
  OFL_ENSURE(start <= end, ctx.where(), ": start_dim=", ctx.attrs.Get<int64_t>("start_dim"),
             " comes after end_dim=", ctx.attrs.Get<int64_t>("end_dim"), " for x.shape=", x.shape);
  Ints dims(x.shape.dims().begin(), x.shape.dims().begin() + start);
  dims.push_back(x.shape.Count(start, end + 1));
  dims.insert(dims.end(), x.shape.dims().begin() + end + 1, x.shape.dims().end());
  return std::vector<TensorDesc>{{Shape(dims), x.dtype}};
}

// S(a) -> S(b) for axes that start at the same flat offset (equal products
// of the axes before them) when the mesh is known and both extents divide
// by every rank count it holds (the product of its axes): then every rank's
// balanced slice of x along a is, element for element, its slice of y along
// b, whatever subset of the mesh axes splits. E.g. [B, T, D] -> [B*T, D]
// with S(0) -> S(0) when B divides (data parallel through a merge), and
// [B*T, D] -> [B, T, H, Dh] with S(1) -> S(2) when D and H do (attention
// split by heads). Pairs with a == b and equal leading axes are excluded:
// they are always sound and listed first without a condition.
void AppendMergeSplits(const Shape& in, const Shape& out, const std::vector<int64_t>& hierarchy,
                       int64_t shared, std::vector<SbpSignature>* sigs) {
  if (hierarchy.empty()) return;
  int64_t ranks = 1;
  for (int64_t size : hierarchy) ranks *= size;
  int64_t in_prefix = 1;
  for (int64_t a = 0; a < in.ndim(); ++a) {
    int64_t out_prefix = 1;
    for (int64_t b = 0; b < out.ndim(); ++b) {
      if (out_prefix == in_prefix && !(a == b && a < shared) && in[a] > 1 && out[b] > 1 &&
          in[a] % ranks == 0 && out[b] % ranks == 0) {
        sigs->push_back({{Sbp::Split(a)}, {Sbp::Split(b)}});
      }
      out_prefix *= out[b];
    }
    in_prefix *= in[a];
  }
}

// Splits on the leading axes that input and output share, merge/split
// pairs (AppendMergeSplits), all-B, and P -> P for floating x (integer
// tensors are ids and counters, never partial sums).
SbpFn ReshapeSbp(Maybe<std::vector<TensorDesc>> (*infer)(const OpContext&)) {
  return [infer](const OpContext& ctx) {
    std::vector<SbpSignature> sigs;
    Maybe<std::vector<TensorDesc>> out = infer(ctx);
    if (out.ok()) {
      const Shape& in_shape = ctx.input(0).shape;
      const Shape& out_shape = out.value()[0].shape;
      int64_t shared = 0;
      for (int64_t a = 0; a < std::min(in_shape.ndim(), out_shape.ndim()); ++a) {
        if (in_shape[a] != out_shape[a]) break;
        sigs.push_back({{Sbp::Split(a)}, {Sbp::Split(a)}});
        shared = a + 1;
      }
      AppendMergeSplits(in_shape, out_shape, ctx.hierarchy, shared, &sigs);
    }
    sigs.push_back({{Sbp::Broadcast()}, {Sbp::Broadcast()}});
    if (IsFloating(ctx.input(0).dtype)) {
      sigs.push_back({{Sbp::PartialSum()}, {Sbp::PartialSum()}});
    }
    return sigs;
  };
}

// Data movement only.
OpCost CopyCost(const OpContext&, const std::vector<TensorDesc>& outs) {
  return {0.0, outs[0].nbytes()};
}

Status ReshapeBack(GradContext& g) {
  if (!g.NeedsInputGrad(0)) return Status::OK();
  OFL_ASSIGN_OR_RETURN(std::string dx, g.Emit1("reshape", {g.OutputGrad(0)},
                                               {{"shape", g.InputDesc(0).shape.dims()}}));
  g.SetInputGrad(0, dx);
  return Status::OK();
}

OFL_REGISTER_OP("reshape")
    .Input("x")
    .Output("y")
    .RequiredAttr("shape", Ints{})
    .InferShape(InferReshape)
    .Sbp(ReshapeSbp(InferReshape))
    .Cost(CopyCost)
    .Grad(ReshapeBack)
    .Doc("The elements of x in the same order under another shape (one -1 is inferred).");

OFL_REGISTER_OP("flatten")
    .Input("x")
    .Output("y")
    .Attr("start_dim", 1)
    .Attr("end_dim", -1)
    .InferShape(InferFlatten)
    .Sbp(ReshapeSbp(InferFlatten))
    .Cost(CopyCost)
    .Grad(ReshapeBack)
    .Doc("Merges the axes start_dim..end_dim of x into one.");

}  // namespace
}  // namespace ofl
