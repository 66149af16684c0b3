// transpose: permutes the axes of x (y.shape[i] = x.shape[perm[i]]), any
// dtype. Registration, inference, SBP (S(perm[i]) in -> S(i) out, B, P),
// cost and gradient (transpose by the inverse permutation). Kernel:
// transpose_cpu.cpp.
#include "ops/array/permutation.h"
#include "ops/grad.h"
#include "ops/op_registry.h"

namespace ofl {

namespace {

Maybe<std::vector<TensorDesc>> InferTranspose(const OpContext& ctx) {
  const TensorDesc& x = ctx.input(0);
  OFL_ASSIGN_OR_RETURN(std::vector<int64_t> perm,
                       NormalizePermutation(ctx.attrs.Get<std::vector<int64_t>>("perm"),
                                            x.shape.ndim(), ctx.where()));
  std::vector<int64_t> dims;
  for (int64_t p : perm) dims.push_back(x.shape[p]);
  return std::vector<TensorDesc>{{Shape(dims), x.dtype}};
}

std::vector<SbpSignature> TransposeSbp(const OpContext& ctx) {
  std::vector<SbpSignature> sigs;
  Maybe<std::vector<int64_t>> perm = NormalizePermutation(
      ctx.attrs.Get<std::vector<int64_t>>("perm"), ctx.input(0).shape.ndim(), ctx.where());
  if (perm.ok()) {
    for (size_t i = 0; i < perm.value().size(); ++i) {
      sigs.push_back({{Sbp::Split(perm.value()[i])}, {Sbp::Split(static_cast<int64_t>(i))}});
    }
  }
  sigs.push_back({{Sbp::Broadcast()}, {Sbp::Broadcast()}});
  // P only for floating x: integer tensors are ids and counters, never partial sums.
  if (IsFloating(ctx.input(0).dtype)) {
    sigs.push_back({{Sbp::PartialSum()}, {Sbp::PartialSum()}});
  }
  return sigs;
}

OpCost TransposeCost(const OpContext&, const std::vector<TensorDesc>& outs) {
  return {0.0, outs[0].nbytes()};  // data movement only
}

Status TransposeGrad(GradContext& g) {
  if (!g.NeedsInputGrad(0)) return Status::OK();
  OFL_ASSIGN_OR_RETURN(std::vector<int64_t> perm,
                       NormalizePermutation(g.attrs().Get<std::vector<int64_t>>("perm"),
                                            g.InputDesc(0).shape.ndim(), g.forward().where()));
  std::vector<int64_t> inverse(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inverse[perm[i]] = static_cast<int64_t>(i);
  OFL_ASSIGN_OR_RETURN(std::string dx,
                       g.Emit1("transpose", {g.OutputGrad(0)}, {{"perm", inverse}}));
  g.SetInputGrad(0, dx);
  return Status::OK();
}

OFL_REGISTER_OP("transpose")
    .Input("x")
    .Output("y")
    .RequiredAttr("perm", std::vector<int64_t>{})
    .InferShape(InferTranspose)
    .Sbp(TransposeSbp)
    .Cost(TransposeCost)
    .Grad(TransposeGrad)
    .Doc(
        "Permutes the axes of x: y.shape[i] = x.shape[perm[i]] (negative entries count from "
        "the end).");

}  // namespace
}  // namespace ofl
