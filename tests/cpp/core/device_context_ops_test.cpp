// The host DeviceContext's byte work (oneflow_lite/core/device_context.h)
// and the backend registry (device_backend.h) against values worked out by
// hand: box copies, sums and means in float32 and float64 (rounding
// included), fills, clones, the order of a worker stream, and the host
// group memory.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "oneflow_lite/core/device_backend.h"
#include "oneflow_lite/core/device_context.h"

namespace ofl {
namespace {

template <typename T>
Tensor Of(const Shape& shape, const std::vector<T>& values, DataType dtype) {
  Tensor t(shape, dtype);
  CHECK_EQ(static_cast<int64_t>(values.size()), t.numel());
  std::memcpy(t.raw(), values.data(), t.nbytes());
  return t;
}

template <typename T>
std::vector<T> Values(const Tensor& t) {
  std::vector<T> out(t.numel());
  std::memcpy(out.data(), t.raw(), t.nbytes());
  return out;
}

TEST(DeviceContextOpsTest, CopyBoxMovesOneBoxBetweenLayouts) {
  CpuDeviceContext context(Device{});
  std::unique_ptr<Stream> stream = context.CreateStream();
  // src (3x4) = [[0 1 2 3] [4 5 6 7] [8 9 10 11]]; the 2x2 box at (1, 1) is
  // [[5 6] [9 10]]; it lands at (0, 1) of a 2x3 target of -1s.
  const Tensor src =
      Of<float>(Shape({3, 4}), {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, DataType::kFloat32);
  Tensor dst = Of<float>(Shape({2, 3}), std::vector<float>(6, -1), DataType::kFloat32);
  context.CopyBox(stream.get(), src, {1, 1}, &dst, {0, 1}, Shape({2, 2}));
  EXPECT_EQ(Values<float>(dst), (std::vector<float>{-1, 5, 6, -1, 9, 10}));
  // 3-d, int64: src (2x2x3) = 0..11; the box 2x1x2 at (0, 1, 1) holds the
  // flat elements 0*6+1*3+1 = 4, 5 and 1*6+1*3+1 = 10, 11.
  std::vector<int64_t> flat(12);
  for (int64_t i = 0; i < 12; ++i) flat[i] = i;
  const Tensor cube = Of<int64_t>(Shape({2, 2, 3}), flat, DataType::kInt64);
  Tensor box = Of<int64_t>(Shape({2, 1, 2}), std::vector<int64_t>(4, 0), DataType::kInt64);
  context.CopyBox(stream.get(), cube, {0, 1, 1}, &box, {0, 0, 0}, Shape({2, 1, 2}));
  EXPECT_EQ(Values<int64_t>(box), (std::vector<int64_t>{4, 5, 10, 11}));
}

TEST(DeviceContextOpsTest, AccumulateAddsInTheElementType) {
  CpuDeviceContext context(Device{});
  std::unique_ptr<Stream> stream = context.CreateStream();
  // float32: 2^24 + 1 rounds back to 2^24 (the float32 spacing there is 2).
  std::vector<float> f = {16777216.0f, 1.5f, -2.0f}, g = {1.0f, 0.25f, 2.0f};
  context.Accumulate(stream.get(), f.data(), g.data(), 3, DataType::kFloat32);
  EXPECT_EQ(f, (std::vector<float>{16777216.0f, 1.75f, 0.0f}));
  // float64: 2^53 + 1 rounds back to 2^53; 2^24 + 1 is exact.
  const double big = 9007199254740992.0;
  std::vector<double> d = {big, 16777216.0, -3.5}, e = {1.0, 1.0, 0.5};
  context.Accumulate(stream.get(), d.data(), e.data(), 3, DataType::kFloat64);
  EXPECT_EQ(d, (std::vector<double>{big, 16777217.0, -3.0}));
}

TEST(DeviceContextOpsTest, ScaleByInverseMultipliesByTheReciprocal) {
  CpuDeviceContext context(Device{});
  std::unique_ptr<Stream> stream = context.CreateStream();
  std::vector<float> f = {8.0f, 2.0f, -1.0f};
  context.ScaleByInverse(stream.get(), f.data(), 3, DataType::kFloat32, 4);
  EXPECT_EQ(f, (std::vector<float>{2.0f, 0.5f, -0.25f}));
  // float64, k = 10: 0.1 is not exact, so 5 * 0.1 = 0.5 exactly but 3 * 0.1 =
  // 0.30000000000000004 (the product by the reciprocal, not 3 / 10 = 0.3).
  std::vector<double> d = {5.0, 3.0};
  context.ScaleByInverse(stream.get(), d.data(), 2, DataType::kFloat64, 10);
  EXPECT_EQ(d[0], 0.5);
  EXPECT_EQ(d[1], 0.30000000000000004);
}

TEST(DeviceContextOpsTest, SyncFillCopyAndCloneToHost) {
  CpuDeviceContext context(Device{DeviceType::kCPU, 2});
  std::vector<int32_t> words(3, 7);
  context.FillSync(words.data(), 0x01, 2 * sizeof(int32_t));
  EXPECT_EQ(words, (std::vector<int32_t>{0x01010101, 0x01010101, 7}));
  const std::vector<int32_t> source = {-4, 5, 6};
  context.CopySync(words.data(), source.data(), 3 * sizeof(int32_t));
  EXPECT_EQ(words, source);
  Tensor t = Of<double>(Shape({2}), {1.25, -8.0}, DataType::kFloat64);
  Tensor clone = context.CloneToHost(t);
  t.data<double>()[0] = 99.0;  // the clone owns its bytes
  EXPECT_EQ(Values<double>(clone), (std::vector<double>{1.25, -8.0}));
  EXPECT_TRUE(clone.device().is_host());
  std::unique_ptr<Stream> stream = context.CreateStream();
  EXPECT_TRUE(context.Finish(stream.get()).ok());
}

TEST(DeviceContextOpsTest, HostSumsWaitForTheStreamsEarlierWork) {
  CpuDeviceContext context(Device{}, /*worker_streams=*/true);
  std::unique_ptr<Stream> stream = context.CreateStream();
  const std::vector<double> a = {1.0, 2.0}, b = {0.5, 0.25};
  std::vector<double> out(2, 0.0);
  context.Copy(stream.get(), out.data(), a.data(), 2 * sizeof(double));           // enqueued
  context.Accumulate(stream.get(), out.data(), b.data(), 2, DataType::kFloat64);  // after it
  context.ScaleByInverse(stream.get(), out.data(), 2, DataType::kFloat64, 2);
  EXPECT_EQ(out, (std::vector<double>{0.75, 1.125}));  // (1 + 0.5) / 2, (2 + 0.25) / 2
}

TEST(DeviceBackendTest, HostGroupMemoryAndMissingBackends) {
  Maybe<GroupMemory> memory =
      DeviceGroupMemory({Device{DeviceType::kCPU, 0}, Device{DeviceType::kCPU, 1}});
  ASSERT_TRUE(memory.ok()) << memory.status().message();
  std::vector<int64_t> dst(2, -1), init = {1, 2}, x = {10, 20}, y = {100, 200};
  memory.value().accumulate(dst.data(), init.data(), {x.data(), y.data()}, 2, DataType::kInt64);
  EXPECT_EQ(dst, (std::vector<int64_t>{111, 222}));
  memory.value().copy(dst.data(), x.data(), sizeof(int64_t));
  EXPECT_EQ(dst, (std::vector<int64_t>{10, 222}));
  // core alone registers no CUDA backend (core/cuda does, in its own library).
  EXPECT_EQ(DeviceCount(DeviceType::kCUDA), 0);
  Maybe<GroupMemory> cuda = DeviceGroupMemory({Device{DeviceType::kCUDA, 0}});
  ASSERT_FALSE(cuda.ok());
  EXPECT_EQ(cuda.status().message(), "cuda:0: this build has no cuda backend");
}

}  // namespace
}  // namespace ofl
