// matmul's bfloat16 path (bfloat16 inputs, float32 accumulation in cuBLASLt)
// against the CPU float32 kernel on the same values (every bfloat16 is a
// float32, and products of two are exact in float32). A float32 output then
// differs only by summation order (rtol 1e-5, atol 1e-5); a bfloat16 output
// also by its rounding, at most 2^-8 relative (rtol 1e-2, atol 1e-3).
// These calls build their KernelContext directly, to check the kernel
// alone (matmul's inference is tests/python/test_mixed_precision.py's).
#include "tests/cpp/cuda/cuda_op_check.h"

namespace ofl::cuda_test {
namespace {

class CudaMatmulBf16 : public CudaOpTest {};

// A float32 tensor whose values are bfloat16, and its bfloat16 twin.
void RandomBf16(const Shape& shape, std::mt19937_64& rng, Tensor* f32, Tensor* bf16) {
  *f32 = Random(shape, DataType::kFloat32, rng);
  RoundToBfloat16(f32);
  *bf16 = ToBfloat16(*f32);
}

Tensor RunCuda(const std::string& op, const AttrMap& attrs, const Tensor& a, const Tensor& b,
               const Shape& out_shape, DataType out_dtype) {
  TestCudaStream stream;
  Tensor a_dev = ToDevice(a), b_dev = ToDevice(b);
  Tensor out = DeviceEmpty(out_shape, out_dtype);
  KernelContext kc;
  kc.op_type = op;
  kc.op_name = op;
  kc.attrs = &attrs;
  kc.inputs = {&a_dev, &b_dev};
  kc.outputs = {&out};
  kc.device = Device{DeviceType::kCUDA, 0};
  kc.stream = &stream;
  const Status status = CallKernel(*KernelRegistry::Find(op, DeviceType::kCUDA).value(), kc);
  EXPECT_TRUE(status.ok()) << status.ToString();
  stream.Synchronize();
  return ToHost(out);
}

TEST_F(CudaMatmulBf16, MatchesFloat32OnTheSameValues) {
  std::mt19937_64 rng(61);
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      for (bool batched : {false, true}) {
        const std::string op = batched ? "batch_matmul" : "matmul";
        Shape as = ta ? Shape({96, 40}) : Shape({40, 96});
        Shape bs = tb ? Shape({24, 96}) : Shape({96, 24});
        Shape out_shape({40, 24});
        if (batched) {
          as = Shape({2, as[0], as[1]});
          bs = Shape({2, bs[0], bs[1]});
          out_shape = Shape({2, 40, 24});
        }
        Tensor a32, a16, b32, b16;
        RandomBf16(as, rng, &a32, &a16);
        RandomBf16(bs, rng, &b32, &b16);
        const AttrMap attrs{{"transpose_a", ta}, {"transpose_b", tb}};
        const Results cpu = RunBoth({op, {a32, b32}, attrs});  // the float32 oracle
        ASSERT_TRUE(cpu.cpu_status.ok()) << cpu.cpu_status.ToString();
        SCOPED_TRACE(op + (ta ? " ta" : "") + (tb ? " tb" : ""));
        ExpectAllClose(cpu.cpu[0], RunCuda(op, attrs, a16, b16, out_shape, DataType::kFloat32),
                       {1e-5, 1e-5}, "bf16 x bf16 -> f32");
        ExpectAllClose(cpu.cpu[0], RunCuda(op, attrs, a16, b16, out_shape, DataType::kBFloat16),
                       {1e-2, 1e-3}, "bf16 x bf16 -> bf16");
      }
    }
  }
}

}  // namespace
}  // namespace ofl::cuda_test
