// CUDA kernels of the array ops against their CPU twins (bitwise copies, so
// any tolerance would do; the default one is used).
#include "tests/cpp/cuda/cuda_op_check.h"

namespace ofl::cuda_test {
namespace {

using Ints = std::vector<int64_t>;

class CudaArrayOps : public CudaOpTest {
 protected:
  std::mt19937_64 rng_{11};
  Tensor F32(const Shape& s) { return Random(s, DataType::kFloat32, rng_); }
};

TEST_F(CudaArrayOps, Concat) {
  for (int64_t axis : {0, 1, 2}) {
    Ints a = {2, 3, 4}, b = {2, 3, 4};
    a[axis] = 1;
    b[axis] = 5;
    ExpectOpMatches(
        {"concat", {F32(Shape(a)), F32(Shape({2, 3, 4})), F32(Shape(b))}, {{"axis", axis}}});
  }
  ExpectOpMatches({"concat",
                   {Random(Shape({3, 2}), DataType::kInt64, rng_, -50, 50),
                    Random(Shape({3, 1}), DataType::kInt64, rng_, -50, 50)},
                   {{"axis", int64_t{1}}}});
}

TEST_F(CudaArrayOps, ReshapeAndFlatten) {
  ExpectOpMatches({"reshape", {F32(Shape({4, 6}))}, {{"shape", Ints{2, 3, 4}}}});
  ExpectOpMatches({"flatten", {F32(Shape({2, 3, 4, 5}))}, {}});
}

TEST_F(CudaArrayOps, SliceAndGrad) {
  const AttrMap attrs{
      {"start", Ints{1, -4, 0}}, {"stop", Ints{3, 100, 5}}, {"step", Ints{1, 2, 3}}};
  ExpectOpMatches({"slice", {F32(Shape({4, 7, 5}))}, attrs});
  ExpectOpMatches({"slice_grad", {F32(Shape({4, 7, 5})), F32(Shape({2, 2, 2}))}, attrs});
}

TEST_F(CudaArrayOps, Transpose) {
  ExpectOpMatches({"transpose", {F32(Shape({2, 3, 4, 5}))}, {{"perm", Ints{2, 0, 3, 1}}}});
  ExpectOpMatches(
      {"transpose", {Random(Shape({5, 3}), DataType::kFloat64, rng_)}, {{"perm", Ints{1, 0}}}});
}

TEST_F(CudaArrayOps, AddN) {
  ExpectOpMatches({"add_n", {F32(Shape({3, 5})), F32(Shape({3, 5})), F32(Shape({3, 5}))}, {}});
  std::vector<Tensor> many;  // more than one launch's chunk of 16 inputs
  for (int i = 0; i < 37; ++i) many.push_back(Random(Shape({129}), DataType::kFloat64, rng_));
  ExpectOpMatches({"add_n", many, {}});
}

TEST_F(CudaArrayOps, OnesAndZerosLike) {
  ExpectOpMatches({"ones_like", {F32(Shape({3, 4}))}, {}});
  ExpectOpMatches({"zeros_like", {Random(Shape({7}), DataType::kFloat64, rng_)}, {}});
}

TEST_F(CudaArrayOps, CastBetweenFloat32AndFloat64) {
  ExpectOpMatches({"cast", {F32(Shape({3, 70}))}, {{"dtype", std::string("float64")}}});
  ExpectOpMatches({"cast",
                   {Random(Shape({129}), DataType::kFloat64, rng_)},
                   {{"dtype", std::string("float32")}}});
}

}  // namespace
}  // namespace ofl::cuda_test
