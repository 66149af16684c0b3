// sparse_softmax_cross_entropy(logits [..., C], labels [...]) -> loss [...]:
// per example log(sum(exp(logits))) - logits[label], not reduced. Labels are
// int32 or int64; a label outside [0, C) fails the kernel with an error naming
// the op, the index, the value and the range. Backward op
// sparse_softmax_cross_entropy_grad(logits, labels, dy) -> dlogits =
// dy * (softmax(logits) - onehot(label)). Kernels: cross_entropy_cpu.cpp.
//
// SBP: logits, labels (and dy) split on the same batch axis, or all B; the
// backward op is also linear in dy ((B, B, P) -> P). No class-split (S(last))
// signature: Megatron's vocabulary-parallel cross entropy needs each row's
// max across ranks (for a stable log-sum-exp), and an Sbp can be partial
// only as a sum; no bound on the max that P-sums give (e.g. the row's L2
// norm) keeps exp from underflowing. The way there is a per-rank stage whose
// logical output has one column per rank ([..., p] S(last): local max or
// local log-sum-exp), all-gathered (p values a row) and reduced, as
// OneFlow's reduce_max_device_stage/global_stage pass does; that makes the
// graph depend on the mesh size, which our ops' signatures do not.
// FLOPs per logits element (exp and log count as 1, per-row terms left out):
//   forward 4 (max, x-max, exp, sum)
//   backward 7 (the forward's 4 to rebuild log-sum-exp, then x-lse, exp, *dy)
#include "ops/grad.h"
#include "ops/nn/common.h"
#include "ops/op_registry.h"

namespace ofl {

namespace {

// Checks logits and labels; returns the per-example shape logits.shape[:-1].
Maybe<Shape> CheckLogitsAndLabels(const OpContext& ctx) {
  const TensorDesc& logits = ctx.input(0);
  const TensorDesc& labels = ctx.input(1);
  OFL_RETURN_IF_ERROR(nn::EnsureComputeFloat(ctx, "logits", logits));
  OFL_ENSURE(logits.shape.ndim() >= 1, ctx.where(), ": logits.shape=", logits.shape,
             " needs a class axis (at least 1 dim)");
  const int64_t classes = logits.shape[logits.shape.ndim() - 1];
  OFL_ENSURE(classes > 0, ctx.where(), ": logits.shape[-1]=", classes, " classes, need at least 1");
  OFL_RETURN_IF_ERROR(nn::EnsureIndexType(ctx, "labels", labels));
  Shape batch = nn::SubShape(logits.shape, 0, logits.shape.ndim() - 1);
  OFL_RETURN_IF_ERROR(nn::EnsureShape(ctx, "labels", labels, "logits.shape[:-1]", batch));
  return batch;
}

Maybe<std::vector<TensorDesc>> InferCrossEntropy(const OpContext& ctx) {
  OFL_ASSIGN_OR_RETURN(Shape batch, CheckLogitsAndLabels(ctx));
  return std::vector<TensorDesc>{{batch, ctx.input(0).dtype}};
}

Maybe<std::vector<TensorDesc>> InferCrossEntropyGrad(const OpContext& ctx) {
  OFL_ASSIGN_OR_RETURN(Shape batch, CheckLogitsAndLabels(ctx));
  OFL_RETURN_IF_ERROR(
      nn::EnsureSameDesc(ctx, "dy", ctx.input(2), "loss", {batch, ctx.input(0).dtype}));
  return std::vector<TensorDesc>{ctx.input(0)};
}

// Every input and the output split on one batch axis, or all B.
std::vector<SbpSignature> CrossEntropySignatures(const OpContext& ctx) {
  const int64_t batch_dims = ctx.input(0).shape.ndim() - 1;
  const int n = ctx.num_inputs();
  std::vector<SbpSignature> sigs;
  for (int64_t a = 0; a < batch_dims; ++a) {
    sigs.push_back({std::vector<Sbp>(n, Sbp::Split(a)), {Sbp::Split(a)}});
  }
  sigs.push_back({std::vector<Sbp>(n, Sbp::Broadcast()), {Sbp::Broadcast()}});
  return sigs;
}

OpCost CrossEntropyCost(const OpContext& ctx, const std::vector<TensorDesc>& outs,
                        double per_element) {
  return {per_element * static_cast<double>(ctx.input(0).shape.NumElements()), outs[0].nbytes()};
}

Status CrossEntropyGrad(GradContext& g) {
  if (!g.NeedsInputGrad(0) || g.OutputGrad(0).empty()) return Status::OK();
  OFL_ASSIGN_OR_RETURN(std::string dlogits, g.Emit1("sparse_softmax_cross_entropy_grad",
                                                    {g.Input(0), g.Input(1), g.OutputGrad(0)}));
  g.SetInputGrad(0, dlogits);
  return Status::OK();
}

}  // namespace

OFL_REGISTER_OP("sparse_softmax_cross_entropy")
    .Input("logits")
    .Input("labels")
    .Output("loss")
    .InferShape(InferCrossEntropy)
    .Sbp(CrossEntropySignatures)
    .Cost([](const OpContext& ctx, const std::vector<TensorDesc>& outs) {
      return CrossEntropyCost(ctx, outs, 4);
    })
    .Grad(CrossEntropyGrad)
    .Doc("Per-example softmax cross entropy of logits [..., C] against integer labels [...].");

OFL_REGISTER_OP("sparse_softmax_cross_entropy_grad")
    .Input("logits")
    .Input("labels")
    .Input("dy")
    .Output("dlogits")
    .InferShape(InferCrossEntropyGrad)
    .Sbp(nn::WithLinearLastInput(CrossEntropySignatures, 1))
    .Cost([](const OpContext& ctx, const std::vector<TensorDesc>& outs) {
      return CrossEntropyCost(ctx, outs, 7);
    })
    .Doc("Backward of sparse_softmax_cross_entropy: dy * (softmax(logits) - onehot(labels)).");

}  // namespace ofl
