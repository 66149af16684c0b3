// CUDA kernels of the comparisons, reduce_any/reduce_all, argmax/argmin,
// gather/gather_grad, where, exp/log/abs/sign/pow and the integer and bool casts
// against their CPU twins. Inputs hold small integers (as floats too) so that
// ties and equal elements occur; bool and index outputs must match exactly.
#include "tests/cpp/cuda/cuda_op_check.h"

namespace ofl::cuda_test {
namespace {

using Ints = std::vector<int64_t>;

class CudaCompareSelectOps : public CudaOpTest {
 protected:
  std::mt19937_64 rng_{29};
  // Integers in [lo, hi) in `t` (float dtypes hold them exactly).
  Tensor Small(const Shape& s, DataType t, int lo = -2, int hi = 3) {
    Tensor i = Random(s, DataType::kInt64, rng_, lo, hi);
    Tensor out(s, t);
    for (int64_t k = 0; k < out.numel(); ++k) {
      const int64_t v = i.data<int64_t>()[k];
      switch (t) {
        case DataType::kFloat32:
          out.data<float>()[k] = static_cast<float>(v);
          break;
        case DataType::kFloat64:
          out.data<double>()[k] = static_cast<double>(v);
          break;
        case DataType::kInt32:
          out.data<int32_t>()[k] = static_cast<int32_t>(v);
          break;
        case DataType::kInt64:
          out.data<int64_t>()[k] = v;
          break;
        case DataType::kBool:
          out.data<bool>()[k] = v > 0;
          break;
        default:
          LOG(FATAL) << "Small: " << DataTypeName(t);
      }
    }
    return out;
  }
};

TEST_F(CudaCompareSelectOps, Comparisons) {
  for (const char* op : {"equal", "not_equal", "less", "less_equal", "greater", "greater_equal"}) {
    for (DataType t : {DataType::kFloat32, DataType::kFloat64, DataType::kInt32, DataType::kInt64,
                       DataType::kBool}) {
      ExpectOpMatches({op, {Small(Shape({3, 70}), t), Small(Shape({3, 70}), t)}, {}});
      ExpectOpMatches({op, {Small(Shape({4, 1, 5}), t), Small(Shape({3, 1}), t)}, {}});
    }
  }
}

TEST_F(CudaCompareSelectOps, LogicalAndArgReductions) {
  for (const char* op : {"reduce_any", "reduce_all"}) {
    ExpectOpMatches({op, {Small(Shape({4, 5, 6}), DataType::kFloat32, 0, 2)}, {{"axes", Ints{1}}}});
    ExpectOpMatches({op, {Small(Shape({4, 5, 6}), DataType::kBool)}, {{"axes", Ints{0, 2}}}});
    ExpectOpMatches({op, {Small(Shape({7, 3}), DataType::kInt64, 0, 2)}, {}});
  }
  for (const char* op : {"argmax", "argmin"}) {
    ExpectOpMatches({op, {Small(Shape({4, 50}), DataType::kFloat32)}, {{"axis", int64_t{1}}}});
    ExpectOpMatches({op,
                     {Random(Shape({6, 5, 3}), DataType::kFloat64, rng_)},
                     {{"axis", int64_t{-2}}, {"keepdims", true}}});
    ExpectOpMatches({op, {Small(Shape({9, 4}), DataType::kInt32)}, {{"axis", int64_t{0}}}});
  }
}

TEST_F(CudaCompareSelectOps, GatherAndWhere) {
  for (DataType t : {DataType::kFloat32, DataType::kFloat64}) {
    ExpectOpMatches(
        {"gather",
         {Random(Shape({3, 40}), t, rng_), Small(Shape({3, 70}), DataType::kInt64, 0, 40)},
         {{"axis", int64_t{1}}}});
    ExpectOpMatches({"gather_grad",
                     {Small(Shape({9, 4}), DataType::kInt32, 0, 5), Random(Shape({9, 4}), t, rng_)},
                     {{"shape", Ints{5, 4}}, {"axis", int64_t{0}}}});
    ExpectOpMatches({"where",
                     {Small(Shape({3, 1}), DataType::kBool), Random(Shape({2, 1, 4}), t, rng_),
                      Random(Shape({4}), t, rng_)},
                     {}});
  }
  ExpectOpMatches({"where",
                   {Small(Shape({5, 6}), DataType::kBool), Small(Shape({5, 6}), DataType::kInt64),
                    Small(Shape({6}), DataType::kInt64)},
                   {}});
}

TEST_F(CudaCompareSelectOps, UnaryMathAndCasts) {
  for (DataType t : {DataType::kFloat32, DataType::kFloat64}) {
    ExpectOpMatches({"exp", {Random(Shape({5, 70}), t, rng_, -3, 3)}, {}});
    ExpectOpMatches({"log", {Random(Shape({5, 70}), t, rng_, 0.1, 4)}, {}});
    ExpectOpMatches({"abs", {Random(Shape({5, 70}), t, rng_)}, {}});
    ExpectOpMatches({"sign", {Small(Shape({5, 70}), t)}, {}});
    ExpectOpMatches(
        {"pow",
         {Random(Shape({4, 1, 5}), t, rng_, 0.5, 2), Random(Shape({3, 1}), t, rng_, -2, 2)},
         {}});
    for (const char* to : {"int32", "int64", "bool"}) {
      ExpectOpMatches({"cast", {Small(Shape({4, 9}), t)}, {{"dtype", std::string(to)}}});
    }
  }
  ExpectOpMatches({"abs", {Small(Shape({40}), DataType::kInt64)}, {}});
  ExpectOpMatches({"sign", {Small(Shape({40}), DataType::kInt32)}, {}});
  ExpectOpMatches(
      {"cast", {Small(Shape({40}), DataType::kBool)}, {{"dtype", std::string("float32")}}});
  ExpectOpMatches(
      {"cast", {Small(Shape({40}), DataType::kInt64)}, {{"dtype", std::string("float64")}}});
}

}  // namespace
}  // namespace ofl::cuda_test
