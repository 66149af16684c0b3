// ones_like, zeros_like and add_n: the small ops autodiff itself emits
// (the loss seed and the sum of gradients that reach one tensor). Their
// kernels: fill_cpu.cpp, fill_cuda.cu.
#include "ops/grad.h"
#include "ops/op_registry.h"
#include "ops/sbp_rules.h"

namespace ofl {

namespace {

Maybe<std::vector<TensorDesc>> SameAsInput(const OpContext& ctx) {
  return std::vector<TensorDesc>{ctx.input(0)};
}

Maybe<std::vector<TensorDesc>> InferAddN(const OpContext& ctx) {
  const TensorDesc& first = ctx.input(0);
  for (int i = 1; i < ctx.num_inputs(); ++i) {
    const TensorDesc& d = ctx.input(i);
    OFL_ENSURE(d.shape == first.shape, ctx.where(), ": inputs[", i, "].shape=", d.shape,
               " != inputs[0].shape=", first.shape);
    OFL_ENSURE(d.dtype == first.dtype, ctx.where(), ": inputs[", i,
               "].dtype=", DataTypeName(d.dtype),
               " != inputs[0].dtype=", DataTypeName(first.dtype));
  }
  OFL_ENSURE(IsComputeFloat(first.dtype), ctx.where(), ": dtype ", DataTypeName(first.dtype),
             " is not float32 or float64");
  return std::vector<TensorDesc>{first};
}

OpCost AddNCost(const OpContext& ctx, const std::vector<TensorDesc>& outs) {
  return {static_cast<double>(outs[0].shape.NumElements()) * (ctx.num_inputs() - 1),
          outs[0].nbytes()};
}

OpCost FillCost(const OpContext&, const std::vector<TensorDesc>& outs) {
  return {0.0, outs[0].nbytes()};
}

// The value does not depend on the input's values: no gradient flows back.
Status NoGradient(GradContext&) { return Status::OK(); }

Status AddNGrad(GradContext& g) {
  for (int i = 0; i < g.num_inputs(); ++i) {
    if (g.NeedsInputGrad(i)) g.SetInputGrad(i, g.OutputGrad(0));
  }
  return Status::OK();
}

SbpFn AddNSbp() {
  return [](const OpContext& ctx) {
    int n = ctx.num_inputs();
    std::vector<SbpSignature> sigs;
    for (int64_t a = 0; a < ctx.input(0).shape.ndim(); ++a) {
      sigs.push_back({std::vector<Sbp>(n, Sbp::Split(a)), {Sbp::Split(a)}});
    }
    sigs.push_back({std::vector<Sbp>(n, Sbp::Broadcast()), {Sbp::Broadcast()}});
    sigs.push_back({std::vector<Sbp>(n, Sbp::PartialSum()), {Sbp::PartialSum()}});
    return sigs;
  };
}

// The constant's value does not depend on the input's values, only on the
// physical shape of the output slice: any split or B works.
SbpFn FillSbp() {
  return [](const OpContext& ctx) {
    std::vector<SbpSignature> sigs;
    for (int64_t a = 0; a < ctx.input(0).shape.ndim(); ++a) {
      sigs.push_back({{Sbp::Split(a)}, {Sbp::Split(a)}});
    }
    sigs.push_back({{Sbp::Broadcast()}, {Sbp::Broadcast()}});
    return sigs;
  };
}

// ones_like also takes a partial sum: it is the seed of backward, and for a
// loss L = sum_r L_r held as P, dL/dL_r = 1 on every rank, so the seed is B
// and the loss needs no all-reduce before backward. (zeros_like keeps
// FillSbp: nothing seeds from it.)
SbpFn OnesLikeSbp() {
  return [](const OpContext& ctx) {
    std::vector<SbpSignature> sigs = FillSbp()(ctx);
    sigs.push_back({{Sbp::PartialSum()}, {Sbp::Broadcast()}});
    return sigs;
  };
}

OFL_REGISTER_OP("add_n")
    .InputList("inputs")
    .Output("out")
    .InferShape(InferAddN)
    .Sbp(AddNSbp())
    .Cost(AddNCost)
    .Grad(AddNGrad)
    .Doc("Sum of one or more tensors of one shape and dtype.");

OFL_REGISTER_OP("ones_like")
    .Input("like")
    .Output("out")
    .InferShape(SameAsInput)
    .Sbp(OnesLikeSbp())
    .Cost(FillCost)
    .Grad(NoGradient)
    .Doc("A tensor of ones with the shape and dtype of `like`.");

OFL_REGISTER_OP("zeros_like")
    .Input("like")
    .Output("out")
    .InferShape(SameAsInput)
    .Sbp(FillSbp())
    .Cost(FillCost)
    .Grad(NoGradient)
    .Doc("A tensor of zeros with the shape and dtype of `like`.");

}  // namespace
}  // namespace ofl
