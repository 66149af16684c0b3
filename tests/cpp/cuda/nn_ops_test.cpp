// CUDA kernels of the nn ops against their CPU twins, float32 at the op
// table's tolerance and float64. Dropout's y and mask must match exactly
// (one Philox stream on both devices), also for a shard of a larger tensor.
#include "tests/cpp/cuda/cuda_op_check.h"

namespace ofl::cuda_test {
namespace {

using Ints = std::vector<int64_t>;

class CudaNnOps : public CudaOpTest {
 protected:
  std::mt19937_64 rng_{37};
  Tensor Rand(const Shape& s, DataType t = DataType::kFloat32, double lo = -1, double hi = 1) {
    return Random(s, t, rng_, lo, hi);
  }
};

TEST_F(CudaNnOps, Activations) {
  for (DataType t : {DataType::kFloat32, DataType::kFloat64}) {
    for (const char* op : {"relu", "gelu", "tanh", "sigmoid"}) {
      ExpectOpMatches({op, {Rand(Shape({7, 33}), t, -6, 6)}, {}});
      const std::string grad = std::string(op) + "_grad";
      ExpectOpMatches({grad, {Rand(Shape({7, 33}), t, -3, 3), Rand(Shape({7, 33}), t)}, {}});
    }
  }
}

TEST_F(CudaNnOps, SoftmaxAndGrads) {
  for (DataType t : {DataType::kFloat32, DataType::kFloat64}) {
    for (const char* op : {"softmax", "log_softmax"}) {
      ExpectOpMatches({op, {Rand(Shape({4, 37}), t, -5, 5)}, {}});
      ExpectOpMatches({op, {Rand(Shape({3, 5, 7}), t, -5, 5)}, {{"axis", int64_t{1}}}});
      ExpectOpMatches({op, {Rand(Shape({2, 1000}), t, -5, 5)}, {}});
      const std::string grad = std::string(op) + "_grad";
      ExpectOpMatches({grad, {Rand(Shape({4, 37}), t, 0, 1), Rand(Shape({4, 37}), t)}, {}});
      ExpectOpMatches({grad,
                       {Rand(Shape({3, 5, 7}), t, 0, 1), Rand(Shape({3, 5, 7}), t)},
                       {{"axis", int64_t{1}}}});
    }
  }
}

TEST_F(CudaNnOps, CrossEntropyAndGrad) {
  for (DataType t : {DataType::kFloat32, DataType::kFloat64}) {
    for (DataType l : {DataType::kInt32, DataType::kInt64}) {
      const Tensor logits = Rand(Shape({6, 11}), t, -4, 4);
      const Tensor labels = Random(Shape({6}), l, rng_, 0, 11);
      ExpectOpMatches({"sparse_softmax_cross_entropy", {logits, labels}, {}});
      ExpectOpMatches(
          {"sparse_softmax_cross_entropy_grad", {logits, labels, Rand(Shape({6}), t)}, {}});
    }
  }
}

TEST_F(CudaNnOps, LayerNormAndGrad) {
  for (DataType t : {DataType::kFloat32, DataType::kFloat64}) {
    ExpectOpMatches(
        {"layer_norm",
         {Rand(Shape({4, 6, 40}), t, -2, 3), Rand(Shape({40}), t), Rand(Shape({40}), t)},
         {}});
    ExpectOpMatches({"layer_norm",
                     {Rand(Shape({4, 6, 40}), t), Rand(Shape({6, 40}), t), Rand(Shape({6, 40}), t)},
                     {{"begin_norm_axis", int64_t{1}}}});
    ExpectOpMatches({"layer_norm_grad",
                     {Rand(Shape({4, 6, 40}), t), Rand(Shape({40}), t), Rand(Shape({4, 6}), t),
                      Rand(Shape({4, 6}), t, 0.5, 2), Rand(Shape({4, 6, 40}), t)},
                     {}});
  }
}

TEST_F(CudaNnOps, DropoutMasksMatchExactly) {
  const Tolerance exact{0, 0};
  for (DataType t : {DataType::kFloat32, DataType::kFloat64}) {
    OpCall call{"dropout", {Rand(Shape({5, 33}), t)}, {{"rate", 0.3}, {"seed", int64_t{1234}}}};
    call.iteration = 7;
    ExpectOpMatches(call, exact);
    // Rows 10..14 and columns 33..65 of a [20, 99] tensor.
    call.logical_shape = Shape({20, 99});
    call.logical_offset = {10, 33};
    ExpectOpMatches(call, exact);
  }
}

TEST_F(CudaNnOps, EmbeddingAndGrad) {
  for (DataType t : {DataType::kFloat32, DataType::kFloat64}) {
    for (DataType l : {DataType::kInt32, DataType::kInt64}) {
      const Tensor ids = Random(Shape({4, 7}), l, rng_, 0, 10);  // repeats on purpose
      ExpectOpMatches({"embedding", {Rand(Shape({10, 16}), t), ids}, {}});
      ExpectOpMatches(
          {"embedding_grad", {ids, Rand(Shape({4, 7, 16}), t)}, {{"num_embeddings", int64_t{10}}}});
      const Tensor many = Random(Shape({300}), l, rng_, 0, 70);  // more ids than buckets
      ExpectOpMatches(
          {"embedding_grad", {many, Rand(Shape({300, 5}), t)}, {{"num_embeddings", int64_t{70}}}});
    }
  }
}

}  // namespace
}  // namespace ofl::cuda_test
