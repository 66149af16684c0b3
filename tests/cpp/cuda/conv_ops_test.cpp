// CUDA kernels of conv2d (cuDNN) and pooling (ours) against their CPU twins:
// float32 with TF32 off at conv's op-table tolerance (rtol 1e-4, atol 1e-5),
// float64 at the default; max pooling also with a NaN in a window.
#include <limits>

#include "ops/conv/conv_geometry.h"
#include "tests/cpp/cuda/cuda_op_check.h"

namespace ofl::cuda_test {
namespace {

using Ints = std::vector<int64_t>;

class CudaConvOps : public CudaOpTest {
 protected:
  std::mt19937_64 rng_{41};
  Tensor Rand(const Shape& s, DataType t, double lo = -1, double hi = 1) {
    return Random(s, t, rng_, lo, hi);
  }
};

TEST_F(CudaConvOps, Conv2dAndGrads) {
  const AttrMap geometry{{"stride", Ints{2, 1}}, {"padding", Ints{1, 1}}, {"dilation", Ints{1, 2}}};
  const int64_t ho = ConvOutputSize(9, 3, 2, 1, 1), wo = ConvOutputSize(8, 3, 1, 1, 2);
  for (DataType t : {DataType::kFloat32, DataType::kFloat64}) {
    const Tolerance tol = t == DataType::kFloat32 ? Tolerance{1e-4, 1e-5} : Tolerance{};
    const Tensor x = Rand(Shape({2, 3, 9, 8}), t), w = Rand(Shape({4, 3, 3, 3}), t);
    const Tensor dy = Rand(Shape({2, 4, ho, wo}), t);
    ExpectOpMatches({"conv2d", {x, w}, geometry}, tol);
    AttrMap grad_input = geometry;
    grad_input.Set("input_shape", Ints{2, 3, 9, 8});
    ExpectOpMatches({"conv2d_grad_input", {dy, w}, grad_input}, tol);
    AttrMap grad_weight = geometry;
    grad_weight.Set("weight_shape", Ints{4, 3, 3, 3});
    ExpectOpMatches({"conv2d_grad_weight", {x, dy}, grad_weight}, tol);
    // A pointwise (1x1) convolution, the CPU's no-im2col path.
    ExpectOpMatches({"conv2d", {Rand(Shape({2, 8, 5, 5}), t), Rand(Shape({6, 8, 1, 1}), t)}, {}},
                    tol);
  }
}

TEST_F(CudaConvOps, PoolingAndGrads) {
  const AttrMap attrs{{"kernel_size", Ints{3, 3}}, {"stride", Ints{2, 2}}, {"padding", Ints{1, 1}}};
  const int64_t ho = ConvOutputSize(9, 3, 2, 1, 1), wo = ConvOutputSize(8, 3, 2, 1, 1);
  for (DataType t : {DataType::kFloat32, DataType::kFloat64}) {
    const Tensor x = Rand(Shape({2, 3, 9, 8}), t);
    const Tensor y = Rand(Shape({2, 3, ho, wo}), t), dy = Rand(Shape({2, 3, ho, wo}), t);
    ExpectOpMatches({"max_pool2d", {x}, attrs});
    ExpectOpMatches({"avg_pool2d", {x}, attrs});
    ExpectOpMatches({"max_pool2d_grad", {x, y, dy}, attrs});
    ExpectOpMatches({"avg_pool2d_grad", {x, dy}, attrs});
    ExpectOpMatches({"max_pool2d", {x}, {{"kernel_size", Ints{2, 2}}}});  // stride = kernel
  }
  // A NaN is the maximum of its windows and takes their gradient.
  Tensor x = Rand(Shape({1, 2, 6, 6}), DataType::kFloat32);
  x.data<float>()[14] = std::numeric_limits<float>::quiet_NaN();
  const AttrMap two{{"kernel_size", Ints{2, 2}}, {"stride", Ints{1, 1}}};
  ExpectOpMatches({"max_pool2d", {x}, two});
  ExpectOpMatches({"max_pool2d_grad",
                   {x, Rand(Shape({1, 2, 5, 5}), DataType::kFloat32),
                    Rand(Shape({1, 2, 5, 5}), DataType::kFloat32)},
                   two});
}

}  // namespace
}  // namespace ofl::cuda_test
