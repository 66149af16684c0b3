// embedding(weight [V, D], ids [...]) -> out [..., D]: out[n] = weight[ids[n]].
// ids are int32 or int64; an id outside [0, V) fails the kernel with an error
// naming the op, the index, the value and the range. Backward
// op embedding_grad(ids, dy) with attr num_embeddings=V -> dweight [V, D],
// the scatter-add of dy's rows at ids. embedding_grad is linear in dy; its
// own gradient is embedding(d_dweight, ids). Kernels: embedding_cpu.cpp.
//
// SBP (inputs weight, ids): ids S(a) with weight B -> out S(a); weight S(1)
// (columns) with ids B -> out S(last); weight S(0) (vocabulary rows) with ids
// B -> out P (Megatron's VocabParallelEmbedding: each rank looks up the ids
// of its rows and writes zeros for the others; the kernel reads its weight
// shard's logical offset, KernelContext::input_logical_offset); weight P
// with ids B -> out P; all B. embedding_grad (inputs ids, dy): ids, dy S(a)
// -> dweight P; ids B, dy S(last) -> S(1); ids B, dy P -> P; ids, dy B ->
// S(0) (each rank adds the ids of its rows, read from output 0's logical
// offset); all B. Ids are checked against the logical vocabulary size on
// every rank, so each reports the same out-of-range id.
// FLOPs: embedding 0 (a gather); embedding_grad 1 per element of dy (the add).
#include "ops/grad.h"
#include "ops/nn/common.h"
#include "ops/op_registry.h"

namespace ofl {

namespace {

Shape AppendAxis(const Shape& shape, int64_t extent) {
  std::vector<int64_t> dims = shape.dims();
  dims.push_back(extent);
  return Shape(dims);
}

Maybe<std::vector<TensorDesc>> InferEmbedding(const OpContext& ctx) {
  const TensorDesc& weight = ctx.input(0);
  const TensorDesc& ids = ctx.input(1);
  OFL_RETURN_IF_ERROR(nn::EnsureComputeFloat(ctx, "weight", weight));
  OFL_ENSURE(weight.shape.ndim() == 2, ctx.where(), ": weight.shape=", weight.shape,
             " must be 2-D [num_embeddings, embedding_dim]");
  OFL_RETURN_IF_ERROR(nn::EnsureIndexType(ctx, "ids", ids));
  return std::vector<TensorDesc>{{AppendAxis(ids.shape, weight.shape[1]), weight.dtype}};
}

Maybe<std::vector<TensorDesc>> InferEmbeddingGrad(const OpContext& ctx) {
  const TensorDesc& ids = ctx.input(0);
  const TensorDesc& dy = ctx.input(1);
  OFL_RETURN_IF_ERROR(nn::EnsureIndexType(ctx, "ids", ids));
  OFL_RETURN_IF_ERROR(nn::EnsureComputeFloat(ctx, "dy", dy));
  OFL_ENSURE(dy.shape.ndim() == ids.shape.ndim() + 1, ctx.where(), ": dy.shape=", dy.shape,
             " must be ids.shape + [embedding_dim], ids.shape=", ids.shape);
  const int64_t dim = dy.shape[dy.shape.ndim() - 1];
  OFL_RETURN_IF_ERROR(
      nn::EnsureShape(ctx, "dy", dy, "ids.shape + [embedding_dim]", AppendAxis(ids.shape, dim)));
  const int64_t num_embeddings = ctx.attrs.Get<int64_t>("num_embeddings");
  OFL_ENSURE(num_embeddings > 0, ctx.where(), ": num_embeddings=", num_embeddings, " must be > 0");
  return std::vector<TensorDesc>{{Shape{num_embeddings, dim}, dy.dtype}};
}

std::vector<SbpSignature> EmbeddingSignatures(const OpContext& ctx) {
  const Sbp b = Sbp::Broadcast();
  const int64_t ids_ndim = ctx.input(1).shape.ndim();
  std::vector<SbpSignature> sigs;
  for (int64_t a = 0; a < ids_ndim; ++a) sigs.push_back({{b, Sbp::Split(a)}, {Sbp::Split(a)}});
  sigs.push_back({{Sbp::Split(1), b}, {Sbp::Split(ids_ndim)}});
  sigs.push_back({{Sbp::Split(0), b}, {Sbp::PartialSum()}});  // vocabulary-parallel
  sigs.push_back({{Sbp::PartialSum(), b}, {Sbp::PartialSum()}});
  sigs.push_back({{b, b}, {b}});
  return sigs;
}

std::vector<SbpSignature> EmbeddingGradSignatures(const OpContext& ctx) {
  const Sbp b = Sbp::Broadcast();
  const Sbp p = Sbp::PartialSum();
  const int64_t ids_ndim = ctx.input(0).shape.ndim();
  std::vector<SbpSignature> sigs;
  for (int64_t a = 0; a < ids_ndim; ++a) sigs.push_back({{Sbp::Split(a), Sbp::Split(a)}, {p}});
  sigs.push_back({{b, Sbp::Split(ids_ndim)}, {Sbp::Split(1)}});
  sigs.push_back({{b, p}, {p}});
  sigs.push_back({{b, b}, {Sbp::Split(0)}});  // vocabulary-parallel: each rank its rows
  sigs.push_back({{b, b}, {b}});
  return sigs;
}

OpCost EmbeddingCost(const OpContext&, const std::vector<TensorDesc>& outs) {
  return {0.0, outs[0].nbytes()};
}

OpCost EmbeddingGradCost(const OpContext& ctx, const std::vector<TensorDesc>& outs) {
  return {static_cast<double>(ctx.input(1).shape.NumElements()), outs[0].nbytes()};
}

Status EmbeddingGrad(GradContext& g) {
  if (!g.NeedsInputGrad(0) || g.OutputGrad(0).empty()) return Status::OK();
  AttrMap attrs{{"num_embeddings", g.InputDesc(0).shape[0]}};
  OFL_ASSIGN_OR_RETURN(std::string dweight,
                       g.Emit1("embedding_grad", {g.Input(1), g.OutputGrad(0)}, attrs));
  g.SetInputGrad(0, dweight);
  return Status::OK();
}

// d(dy) = embedding(d_dweight, ids): the gather is the scatter-add's adjoint.
Status EmbeddingGradGrad(GradContext& g) {
  if (!g.NeedsInputGrad(1) || g.OutputGrad(0).empty()) return Status::OK();
  OFL_ASSIGN_OR_RETURN(std::string ddy, g.Emit1("embedding", {g.OutputGrad(0), g.Input(0)}));
  g.SetInputGrad(1, ddy);
  return Status::OK();
}

}  // namespace

OFL_REGISTER_OP("embedding")
    .Input("weight")
    .Input("ids")
    .Output("out")
    .InferShape(InferEmbedding)
    .Sbp(EmbeddingSignatures)
    .Cost(EmbeddingCost)
    .Grad(EmbeddingGrad)
    .Doc("Rows of weight [V, D] gathered at integer ids [...]: out [..., D].");

OFL_REGISTER_OP("embedding_grad")
    .Input("ids")
    .Input("dy")
    .Output("dweight")
    .RequiredAttr("num_embeddings", AttrValue(int64_t{0}))
    .InferShape(InferEmbeddingGrad)
    .Sbp(EmbeddingGradSignatures)
    .Cost(EmbeddingGradCost)
    .Grad(EmbeddingGradGrad)
    .Doc("Backward of embedding: dweight [num_embeddings, D], dy's rows summed at ids.");

}  // namespace ofl
