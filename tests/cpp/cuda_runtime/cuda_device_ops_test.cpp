// The CUDA DeviceContext's byte work (oneflow_lite/core/cuda/
// cuda_device_context.h) against the values tests/cpp/core/
// device_context_ops_test.cpp works out by hand for the host (box copies,
// sums and means with their rounding, fills, clones), and gradient
// accumulation (ACC) in a Runtime on the device. Skipped with "no CUDA
// device" without a GPU, except the registration check.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "oneflow_lite/core/cuda/cuda_device_context.h"
#include "oneflow_lite/core/device_backend.h"
#include "runtime/runtime.h"
#include "tests/cpp/cuda_runtime/require_cuda.h"
#include "tests/cpp/runtime/plan_maker.h"

namespace ofl {
namespace {

const Device kCuda0{DeviceType::kCUDA, 0};

// A device tensor of `shape` holding `values`.
template <typename T>
Tensor Upload(DeviceContext* context, const Shape& shape, const std::vector<T>& values,
              DataType dtype) {
  Tensor t = context->allocator()->NewTensor(shape, dtype).value();
  context->CopySync(t.raw(), values.data(), t.nbytes());
  return t;
}

template <typename T>
std::vector<T> Download(DeviceContext* context, const Tensor& t) {
  const Tensor host = context->CloneToHost(t);
  std::vector<T> out(host.numel());
  std::memcpy(out.data(), host.raw(), host.nbytes());
  return out;
}

TEST(CudaDeviceOpsTest, TheCudaBackendIsRegisteredWithTheLibrary) {
  if (CudaDeviceCount() > 0) GTEST_SKIP() << "a CUDA device exists here";
  // The CUDA backend's own refusal, not "this build has no cuda backend".
  EXPECT_EQ(CreateDeviceContext(kCuda0).status().message(), "cuda:0: no CUDA device");
  EXPECT_EQ(DeviceGroupMemory({kCuda0}).status().message(), "cuda:0: no CUDA device");
}

TEST(CudaDeviceOpsTest, CopyBoxSumAndMeanGiveTheHandWorkedValues) {
  OFL_SKIP_WITHOUT_CUDA();
  std::unique_ptr<DeviceContext> context = CreateDeviceContext(kCuda0).value();
  std::unique_ptr<Stream> stream = context->CreateStream();
  const Tensor src = Upload<float>(context.get(), Shape({3, 4}),
                                   {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, DataType::kFloat32);
  Tensor dst =
      Upload<float>(context.get(), Shape({2, 3}), std::vector<float>(6, -1), DataType::kFloat32);
  context->CopyBox(stream.get(), src, {1, 1}, &dst, {0, 1}, Shape({2, 2}));
  // float32: 2^24 + 1 rounds back to 2^24.
  Tensor f =
      Upload<float>(context.get(), Shape({3}), {16777216.0f, 1.5f, -2.0f}, DataType::kFloat32);
  const Tensor g =
      Upload<float>(context.get(), Shape({3}), {1.0f, 0.25f, 2.0f}, DataType::kFloat32);
  context->Accumulate(stream.get(), f.raw(), g.raw(), 3, DataType::kFloat32);
  // float64, k = 10: 5 * 0.1 = 0.5, 3 * 0.1 = 0.30000000000000004.
  Tensor d = Upload<double>(context.get(), Shape({2}), {5.0, 3.0}, DataType::kFloat64);
  context->ScaleByInverse(stream.get(), d.raw(), 2, DataType::kFloat64, 10);
  ASSERT_TRUE(context->Finish(stream.get()).ok());
  EXPECT_EQ(Download<float>(context.get(), dst), (std::vector<float>{-1, 5, 6, -1, 9, 10}));
  EXPECT_EQ(Download<float>(context.get(), f), (std::vector<float>{16777216.0f, 1.75f, 0.0f}));
  EXPECT_EQ(Download<double>(context.get(), d), (std::vector<double>{0.5, 0.30000000000000004}));
  Tensor words = context->allocator()->NewTensor(Shape({3}), DataType::kInt32).value();
  context->FillSync(words.raw(), 0x01, words.nbytes());
  EXPECT_EQ(Download<int32_t>(context.get(), words),
            (std::vector<int32_t>{0x01010101, 0x01010101, 0x01010101}));
}

// x (fed, cuda:0) -> ACC g (period k) -> sink: the fetched g of a step is
// the mean of its k micro-batches' x, computed on the device.
TEST(CudaDeviceOpsTest, GradientAccumulationRunsOnTheDevice) {
  OFL_SKIP_WITHOUT_CUDA();
  const int64_t k = 4;
  PlanMaker m(1);
  const int64_t x = m.Register("x", 0, {2}, 2);
  const int64_t g = m.Register("g", 0, {2}, 1);
  m.plan().mutable_registers(g)->set_period(k);
  m.Source("x", 0, 0, x)->set_device("cuda:0");
  m.Task(proto::TaskProto::ACC, 0, 0, "g", "", {x}, {g})->set_device("cuda:0");
  proto::TaskProto* sink = m.Sink("g", 0, 0, g);
  sink->set_device("cuda:0");
  sink->set_period(k);
  for (auto& r : *m.plan().mutable_registers()) r.set_device("cuda:0");
  auto rt = Runtime::Create(m.plan()).value();
  std::vector<TensorMap> feeds;
  for (int i = 0; i < 2 * k; ++i) {  // micro-batch i: {i, -2i}
    Tensor t(Shape({2}), DataType::kFloat32);
    t.data<float>()[0] = static_cast<float>(i);
    t.data<float>()[1] = -2.0f * static_cast<float>(i);
    feeds.push_back({{{"x", 0}, t}});
  }
  RunResult r = rt->Run(2 * k, feeds, {"g"}).value();
  // Step 0: mean(0, 1, 2, 3) = 1.5 (6 * 0.25), -3; step 1: mean(4..7) = 5.5, -11.
  const Tensor& s0 = r.fetched[k - 1].at({"g", 0});
  const Tensor& s1 = r.fetched[2 * k - 1].at({"g", 0});
  EXPECT_EQ(s0.data<float>()[0], 1.5f);
  EXPECT_EQ(s0.data<float>()[1], -3.0f);
  EXPECT_EQ(s1.data<float>()[0], 5.5f);
  EXPECT_EQ(s1.data<float>()[1], -11.0f);
}

}  // namespace
}  // namespace ofl
