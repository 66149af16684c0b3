// CUDA kernels of the math ops against their CPU twins, float32 (TF32 off)
// at the op table's tolerance and float64. matmul and batch_matmul use
// atol 1e-5: cuBLASLt and oneDNN sum k products in different orders.
#include "tests/cpp/cuda/cuda_op_check.h"

namespace ofl::cuda_test {
namespace {

using Ints = std::vector<int64_t>;

class CudaMathOps : public CudaOpTest {
 protected:
  std::mt19937_64 rng_{23};
  Tensor Rand(const Shape& s, DataType t = DataType::kFloat32, double lo = -1, double hi = 1) {
    return Random(s, t, rng_, lo, hi);
  }
};

TEST_F(CudaMathOps, BinaryFlatAndBroadcast) {
  for (const char* op : {"add", "sub", "mul", "div"}) {
    for (DataType t : {DataType::kFloat32, DataType::kFloat64}) {
      ExpectOpMatches({op, {Rand(Shape({3, 70}), t), Rand(Shape({3, 70}), t, 0.5, 2)}, {}});
      ExpectOpMatches({op, {Rand(Shape({4, 1, 5}), t), Rand(Shape({3, 1}), t, 0.5, 2)}, {}});
      ExpectOpMatches(
          {op, {Rand(Shape({2, 3, 4, 5}), t), Rand(Shape({1, 3, 1, 1}), t, 0.5, 2)}, {}});
    }
  }
}

TEST_F(CudaMathOps, BiasAdd) {
  ExpectOpMatches({"bias_add", {Rand(Shape({2, 6, 3, 4})), Rand(Shape({6}))}, {}});
  ExpectOpMatches({"bias_add",
                   {Rand(Shape({5, 7}), DataType::kFloat64), Rand(Shape({7}), DataType::kFloat64)},
                   {{"axis", int64_t{-1}}}});
}

TEST_F(CudaMathOps, BroadcastToAndSumTo) {
  ExpectOpMatches({"broadcast_to", {Rand(Shape({3, 1}))}, {{"shape", Ints{2, 3, 4}}}});
  ExpectOpMatches({"broadcast_to", {Rand(Shape({3}))}, {{"shape", Ints{3, 5}}, {"axes", Ints{1}}}});
  ExpectOpMatches({"sum_to", {Rand(Shape({2, 3, 4}))}, {{"shape", Ints{3, 1}}}});
  ExpectOpMatches({"sum_to", {Rand(Shape({3, 5}))}, {{"shape", Ints{3}}, {"axes", Ints{1}}}});
}

TEST_F(CudaMathOps, Reductions) {
  for (const char* op : {"reduce_sum", "reduce_mean"}) {
    ExpectOpMatches({op, {Rand(Shape({4, 5, 6}))}, {{"axes", Ints{1}}}});
    ExpectOpMatches({op, {Rand(Shape({4, 5, 6}))}, {{"axes", Ints{0, 2}}}});
    ExpectOpMatches({op, {Rand(Shape({4, 5, 6}), DataType::kFloat64)}, {}});
    // More than 1024 elements per output: the block-per-output path.
    ExpectOpMatches({op, {Rand(Shape({3, 3000}))}, {{"axes", Ints{1}}}});
    ExpectOpMatches({op, {Rand(Shape({50, 40, 3}))}, {{"axes", Ints{0, 1}}}});
  }
}

TEST_F(CudaMathOps, Scalar) {
  ExpectOpMatches({"scalar_add", {Rand(Shape({5, 3}))}, {{"value", 0.25}}});
  ExpectOpMatches({"scalar_mul", {Rand(Shape({5, 3}), DataType::kFloat64)}, {{"value", -3.5}}});
  for (double e : {2.0, 1.0, 3.0, 0.5}) {
    ExpectOpMatches(
        {"scalar_pow", {Rand(Shape({40}), DataType::kFloat32, 0.1, 2)}, {{"exponent", e}}});
  }
}

TEST_F(CudaMathOps, Matmul) {
  const Tolerance gemm{1e-5, 1e-5};
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      const Shape a = ta ? Shape({24, 17}) : Shape({17, 24});
      const Shape b = tb ? Shape({9, 24}) : Shape({24, 9});
      const AttrMap attrs{{"transpose_a", ta}, {"transpose_b", tb}};
      ExpectOpMatches({"matmul", {Rand(a), Rand(b)}, attrs}, gemm);
      ExpectOpMatches(
          {"matmul", {Rand(a, DataType::kFloat64), Rand(b, DataType::kFloat64)}, attrs});
      const Shape ba = ta ? Shape({3, 24, 17}) : Shape({3, 17, 24});
      const Shape bb = tb ? Shape({3, 9, 24}) : Shape({3, 24, 9});
      ExpectOpMatches({"batch_matmul", {Rand(ba), Rand(bb)}, attrs}, gemm);
    }
  }
  ExpectOpMatches({"matmul", {Rand(Shape({128, 256})), Rand(Shape({256, 64}))}, {}}, gemm);
}

}  // namespace
}  // namespace ofl::cuda_test
