// The device-side error path: an id or label out of range in a CUDA kernel
// is no device fault; the stream's owner takes the error afterwards and gets
// the CPU kernel's very message (first bad element, shard offsets included),
// and the record is free again for the next launch.
#include "tests/cpp/cuda/cuda_op_check.h"

namespace ofl::cuda_test {
namespace {

class CudaDeviceErrors : public CudaOpTest {};

Tensor Ids(const Shape& shape, DataType dtype, const std::vector<int64_t>& values) {
  Tensor t(shape, dtype);
  for (size_t i = 0; i < values.size(); ++i) {
    if (dtype == DataType::kInt32) t.data<int32_t>()[i] = static_cast<int32_t>(values[i]);
    if (dtype == DataType::kInt64) t.data<int64_t>()[i] = values[i];
  }
  return t;
}

// CPU fails, CUDA's call succeeds and its device error is the CPU's message.
void ExpectSameError(const OpCall& call) {
  const Results r = RunBoth(call);
  ASSERT_FALSE(r.cpu_status.ok()) << "the CPU kernel accepted the bad index";
  EXPECT_TRUE(r.cuda_status.ok()) << r.cuda_status.ToString();
  ASSERT_FALSE(r.device_error.ok()) << "no device-side error recorded";
  EXPECT_EQ(r.device_error.code(), r.cpu_status.code());
  EXPECT_EQ(r.device_error.ToString(), r.cpu_status.ToString());
}

TEST_F(CudaDeviceErrors, EmbeddingIdOutOfRangeGivesTheCpuMessage) {
  std::mt19937_64 rng(3);
  const Tensor weight = Random(Shape({10, 4}), DataType::kFloat32, rng);
  for (DataType l : {DataType::kInt32, DataType::kInt64}) {
    ExpectSameError({"embedding", {weight, Ids(Shape({2, 3}), l, {1, 2, 3, 4, 5, 12})}, {}});
    // The first bad element wins: [0, 1] before [1, 2].
    ExpectSameError({"embedding", {weight, Ids(Shape({2, 3}), l, {1, -1, 3, 4, 5, 12})}, {}});
    ExpectSameError(
        {"embedding_grad",
         {Ids(Shape({3}), l, {0, 10, 2}), Random(Shape({3, 4}), DataType::kFloat32, rng)},
         {{"num_embeddings", int64_t{10}}}});
  }
  // A shard at logical rows 4..5 names the logical index, "ids[5, 2]=12".
  OpCall shard{
      "embedding", {weight, Ids(Shape({2, 3}), DataType::kInt64, {1, 2, 3, 4, 5, 12})}, {}};
  shard.logical_shape = Shape({8, 3, 4});
  shard.logical_offset = {4, 0, 0};
  const Results r = RunBoth(shard);
  EXPECT_NE(r.device_error.ToString().find("ids[5, 2]=12"), std::string::npos)
      << r.device_error.ToString();
  EXPECT_EQ(r.device_error.ToString(), r.cpu_status.ToString());
}

TEST_F(CudaDeviceErrors, CrossEntropyLabelOutOfRangeGivesTheCpuMessage) {
  std::mt19937_64 rng(5);
  const Tensor logits = Random(Shape({3, 5}), DataType::kFloat64, rng);
  ExpectSameError(
      {"sparse_softmax_cross_entropy", {logits, Ids(Shape({3}), DataType::kInt64, {0, 5, 1})}, {}});
  ExpectSameError({"sparse_softmax_cross_entropy_grad",
                   {logits, Ids(Shape({3}), DataType::kInt32, {0, 1, -2}),
                    Random(Shape({3}), DataType::kFloat64, rng)},
                   {}});
}

// Two failing launches on one stream: the first one's error is reported;
// after TakeDeviceError a good launch reports nothing.
TEST_F(CudaDeviceErrors, FirstFailingLaunchWinsAndTheRecordIsReset) {
  std::mt19937_64 rng(9);
  TestCudaStream stream;
  const AttrMap none;
  Tensor weight = ToDevice(Random(Shape({10, 4}), DataType::kFloat32, rng));
  auto run_embedding = [&](const std::vector<int64_t>& ids, const std::string& name) {
    Tensor ids_dev = ToDevice(Ids(Shape({3}), DataType::kInt64, ids));
    Tensor out = DeviceEmpty(Shape({3, 4}), DataType::kFloat32);
    KernelContext kc;
    kc.op_type = "embedding";
    kc.op_name = name;
    kc.attrs = &none;
    kc.inputs = {&weight, &ids_dev};
    kc.outputs = {&out};
    kc.device = Device{DeviceType::kCUDA, 0};
    kc.stream = &stream;
    EXPECT_TRUE(CallKernel(*KernelRegistry::Find("embedding", DeviceType::kCUDA).value(), kc).ok());
    stream.Synchronize();  // keep the tensors alive until the kernels ran
  };
  run_embedding({1, 11, 2}, "first");
  run_embedding({-3, 1, 2}, "second");
  const Status status = stream.TakeDeviceError();
  EXPECT_EQ(status.ToString(),
            "embedding 'first': ids[1]=11 is out of range [0, 10) (weight.shape[0]=10)");
  run_embedding({1, 2, 3}, "third");
  EXPECT_TRUE(stream.TakeDeviceError().ok());
}

}  // namespace
}  // namespace ofl::cuda_test
