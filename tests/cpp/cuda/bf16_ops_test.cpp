// bfloat16 CUDA kernels (storage type; computed in float) of the elementwise,
// broadcast, reduction, activation, add_n and dropout ops against the CPU
// float32 kernel on the same values (inputs rounded to bfloat16 first).
// Each result is float32 math rounded once (or, for add_n, once per 16
// inputs) to bfloat16, within 2^-8 relative: rtol 1e-2, atol 1e-5. Dropout's
// kept/dropped pattern must be the CPU's exactly. Only matmul, batch_matmul
// and cast infer bfloat16 (mixed precision keeps the other ops in float32); these calls
// infer in float32 and hand the CUDA kernel bfloat16.
#include "tests/cpp/cuda/cuda_op_check.h"

namespace ofl::cuda_test {
namespace {

using Ints = std::vector<int64_t>;

const Tolerance kBf16{1e-2, 1e-5};

class CudaBf16Ops : public CudaOpTest {
 protected:
  std::mt19937_64 rng_{71};
  Tensor Rand(const Shape& s, double lo = -1, double hi = 1) {
    Tensor t = Random(s, DataType::kFloat32, rng_, lo, hi);
    RoundToBfloat16(&t);
    return t;
  }
  void Check(const OpCall& call) { ExpectOpMatches(call, kBf16, DataType::kBFloat16); }
};

TEST_F(CudaBf16Ops, Elementwise) {
  for (const char* op : {"add", "sub", "mul", "div"}) {
    Check({op, {Rand(Shape({3, 70})), Rand(Shape({3, 70}), 0.5, 2)}});
    Check({op, {Rand(Shape({4, 1, 5})), Rand(Shape({3, 1}), 0.5, 2)}});
  }
  Check({"bias_add", {Rand(Shape({2, 6, 3, 4})), Rand(Shape({6}))}});
  Check({"scalar_add", {Rand(Shape({50}))}, {{"value", 0.25}}});
  Check({"scalar_mul", {Rand(Shape({50}))}, {{"value", -3.0}}});
  Check({"scalar_pow", {Rand(Shape({50}), 0.1, 2)}, {{"exponent", 3.0}}});
  Check({"add_n", {Rand(Shape({40})), Rand(Shape({40})), Rand(Shape({40}))}});
}

TEST_F(CudaBf16Ops, BroadcastAndReductions) {
  Check({"broadcast_to", {Rand(Shape({3, 1}))}, {{"shape", Ints{2, 3, 4}}}});
  Check({"sum_to", {Rand(Shape({2, 3, 4}))}, {{"shape", Ints{3, 1}}}});
  Check({"reduce_sum", {Rand(Shape({4, 5, 6}))}, {{"axes", Ints{1}}}});
  Check({"reduce_mean", {Rand(Shape({3, 3000}))}, {{"axes", Ints{1}}}});
}

TEST_F(CudaBf16Ops, Activations) {
  for (const char* op : {"relu", "gelu", "tanh", "sigmoid"}) {
    Check({op, {Rand(Shape({7, 33}), -6, 6)}});
    Check({std::string(op) + "_grad", {Rand(Shape({7, 33}), -3, 3), Rand(Shape({7, 33}))}});
  }
}

TEST_F(CudaBf16Ops, DropoutKeepsTheCpuPattern) {
  OpCall call{"dropout", {Rand(Shape({5, 33}))}, {{"rate", 0.3}, {"seed", int64_t{99}}}};
  call.iteration = 3;
  const Results r = RunBoth(call, DataType::kBFloat16);
  ASSERT_TRUE(r.cpu_status.ok() && r.cuda_status.ok());
  for (size_t o = 0; o < 2; ++o) {
    ExpectAllClose(r.cpu[o], r.cuda[o], kBf16, r.names[o]);
    for (int64_t i = 0; i < r.cpu[o].numel(); ++i) {
      ASSERT_EQ(ValueAt(r.cpu[o], i) == 0, ValueAt(r.cuda[o], i) == 0)
          << r.names[o] << "[" << i << "]";
    }
  }
}

}  // namespace
}  // namespace ofl::cuda_test
