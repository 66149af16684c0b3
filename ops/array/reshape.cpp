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
#include <map>

#include "oneflow_lite/core/checked_math.h"
#include "ops/grad.h"
#include "ops/op_registry.h"

namespace ofl {

namespace {

using Ints = std::vector<int64_t>;

std::string Str(const Ints& v) { return AttrToString(AttrValue(v)); }

// The product of the target's extents other than its -1; an error when it
// is more than int64 can hold (checked before any -1 is inferred).
Maybe<int64_t> KnownCount(const OpContext& ctx, const Ints& target, bool has_infer_axis) {
  Ints known;
  for (int64_t d : target) {
    if (d != -1) known.push_back(d);
  }
  if (std::find(known.begin(), known.end(), 0) != known.end()) return int64_t{0};
  int64_t count = 1;
  for (int64_t d : known) {
    std::optional<int64_t> next = MulInt64(count, d);
    OFL_ENSURE(next, ctx.where(), ": shape ", Shape(target), " has ",
               has_infer_axis ? "known extents whose product is " : "", ProductText(known),
               has_infer_axis ? "" : " elements", ", more than int64 can hold");
    count = *next;
  }
  return count;
}

Maybe<std::vector<TensorDesc>> InferReshape(const OpContext& ctx) {
  const TensorDesc& x = ctx.input(0);
  const Ints& target = ctx.attrs.Get<Ints>("shape");
  int64_t infer_axis = -1;
  for (size_t i = 0; i < target.size(); ++i) {
    if (target[i] == -1) {
      OFL_ENSURE(infer_axis < 0, ctx.where(), ": shape=", Str(target), " may hold at most one -1");
      infer_axis = static_cast<int64_t>(i);
    } else {
      OFL_ENSURE(target[i] >= 0, ctx.where(), ": shape=", Str(target), " has the negative extent ",
                 target[i], " (only -1 is allowed, once)");
    }
  }
  OFL_ASSIGN_OR_RETURN(const int64_t known, KnownCount(ctx, target, infer_axis >= 0));
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
// Offered when some mesh axis divides both extents; ReshapeNdFilter keeps
// an N-D combination only when, for every split input axis, the product of
// the mesh axes splitting it divides both extents and all of them map it to
// the same output axis.
void AppendMergeSplits(const Shape& in, const Shape& out, const std::vector<int64_t>& hierarchy,
                       int64_t shared, std::vector<SbpSignature>* sigs) {
  if (hierarchy.empty()) return;
  auto some_axis_divides = [&](int64_t x, int64_t y) {
    for (int64_t size : hierarchy) {
      if (x % size == 0 && y % size == 0) return true;
    }
    return false;
  };
  int64_t in_prefix = 1;
  for (int64_t a = 0; a < in.ndim(); ++a) {
    int64_t out_prefix = 1;
    for (int64_t b = 0; b < out.ndim(); ++b) {
      if (out_prefix == in_prefix && !(a == b && a < shared) && in[a] > 1 && out[b] > 1 &&
          some_axis_divides(in[a], out[b])) {
        sigs->push_back({{Sbp::Split(a)}, {Sbp::Split(b)}});
      }
      out_prefix *= out[b];
    }
    in_prefix *= in[a];
  }
}

// Infers the output shape again (the filter sees only the context).
NdSbpFilterFn ReshapeNdFilter(Maybe<std::vector<TensorDesc>> (*infer)(const OpContext&)) {
  return
      [infer](const OpContext& ctx, const std::vector<NdSbp>& ins, const std::vector<NdSbp>& outs) {
        Maybe<std::vector<TensorDesc>> out = infer(ctx);
        if (!out.ok()) return true;
        const Shape& in_shape = ctx.input(0).shape;
        const Shape& out_shape = out.value()[0].shape;
        int64_t shared = 0;
        while (shared < std::min(in_shape.ndim(), out_shape.ndim()) &&
               in_shape[shared] == out_shape[shared]) {
          ++shared;
        }
        std::map<int64_t, std::pair<int64_t, int64_t>> split;  // input axis -> (output axis, ranks)
        for (size_t m = 0; m < ctx.hierarchy.size(); ++m) {
          const Sbp& x = ins[0].axes()[m];
          const Sbp& y = outs[0].axes()[m];
          if (!x.is_split()) continue;
          if (!y.is_split()) return false;  // reshape's signatures pair S with S
          auto [it, fresh] = split.emplace(x.axis(), std::make_pair(y.axis(), int64_t{1}));
          if (!fresh && it->second.first != y.axis()) return false;
          it->second.second *= ctx.hierarchy[m];
        }
        for (const auto& [a, to] : split) {
          const auto& [b, ranks] = to;
          if (a == b && a < shared) continue;  // unchanged leading axis: always sound
          if (in_shape[a] % ranks != 0 || out_shape[b] % ranks != 0) return false;
        }
        return true;
      };
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
    .NdSbpFilter(ReshapeNdFilter(InferReshape))
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
    .NdSbpFilter(ReshapeNdFilter(InferFlatten))
    .Cost(CopyCost)
    .Grad(ReshapeBack)
    .Doc("Merges the axes start_dim..end_dim of x into one.");

}  // namespace
}  // namespace ofl
