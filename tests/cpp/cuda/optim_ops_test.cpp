// CUDA kernels of the optimizer updates (in place: the mutated param and
// state are compared) and clip_factor against their CPU twins.
#include <limits>

#include "tests/cpp/cuda/cuda_op_check.h"

namespace ofl::cuda_test {
namespace {

class CudaOptimOps : public CudaOpTest {
 protected:
  std::mt19937_64 rng_{53};
  Tensor Rand(const Shape& s, DataType t, double lo = -1, double hi = 1) {
    return Random(s, t, rng_, lo, hi);
  }
  static Tensor Scalar(DataType t, double v) { return Tensor::Full(Shape({}), t, v); }
};

TEST_F(CudaOptimOps, Sgd) {
  for (DataType t : {DataType::kFloat32, DataType::kFloat64}) {
    const Shape s({300});
    ExpectOpMatches({"sgd_update", {Rand(s, t), Rand(s, t), Rand(s, t)}, {{"lr", 0.1}}});
    const AttrMap attrs{{"lr", 0.1}, {"momentum", 0.9}, {"weight_decay", 0.01}};
    ExpectOpMatches({"sgd_update", {Rand(s, t), Rand(s, t), Rand(s, t)}, attrs});
    // The fed lr (either float type) replaces the attribute.
    for (DataType lr : {DataType::kFloat32, DataType::kFloat64}) {
      ExpectOpMatches(
          {"sgd_update", {Rand(s, t), Rand(s, t), Rand(s, t), Scalar(lr, 0.05)}, attrs});
    }
  }
}

TEST_F(CudaOptimOps, AdamAndAdamW) {
  for (DataType t : {DataType::kFloat32, DataType::kFloat64}) {
    for (bool decoupled : {false, true}) {
      const Shape s({257});
      const AttrMap attrs{
          {"lr", 0.01}, {"weight_decay", 0.1}, {"decoupled_weight_decay", decoupled}};
      const Tensor step = Tensor::Full(Shape({}), DataType::kInt64, 4);
      ExpectOpMatches(
          {"adam_update", {Rand(s, t), Rand(s, t), Rand(s, t), Rand(s, t, 0, 1), step}, attrs});
      ExpectOpMatches({"adam_update",
                       {Rand(s, t), Rand(s, t), Rand(s, t), Rand(s, t, 0, 1), step,
                        Scalar(DataType::kFloat32, 0.003)},
                       attrs});
    }
  }
}

TEST_F(CudaOptimOps, ClipFactor) {
  for (DataType t : {DataType::kFloat32, DataType::kFloat64}) {
    for (double norm : {0.5, 3.0, 1e9, std::numeric_limits<double>::quiet_NaN()}) {
      ExpectOpMatches({"clip_factor", {Tensor::Full(Shape({}), t, norm)}, {{"max_norm", 1.0}}});
    }
  }
}

}  // namespace
}  // namespace ofl::cuda_test
