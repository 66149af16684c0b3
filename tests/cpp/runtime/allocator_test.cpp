// DeviceAllocator: live and peak bytes follow allocations and frees.
#include <gtest/gtest.h>

#include "runtime/allocator.h"

namespace ofl {
namespace {

TEST(DeviceAllocatorTest, TracksLiveAndPeak) {
  DeviceAllocator alloc;
  Tensor a = alloc.Allocate({10}, DataType::kFloat32);  // 40 bytes
  {
    Tensor b = alloc.AllocateZeros({4, 4}, DataType::kFloat64);  // 128 bytes
    Tensor shared = b;
    EXPECT_EQ(alloc.live_bytes(), 168);
  }
  EXPECT_EQ(alloc.live_bytes(), 40);
  EXPECT_EQ(alloc.peak_bytes(), 168);
  Tensor c = alloc.Allocate({3}, DataType::kInt64);  // 24 bytes: below the peak
  EXPECT_EQ(alloc.live_bytes(), 64);
  EXPECT_EQ(alloc.peak_bytes(), 168);
  alloc.ResetPeak();
  EXPECT_EQ(alloc.peak_bytes(), 64);
}

TEST(DeviceAllocatorTest, TensorMayOutliveTheAllocator) {
  Tensor t;
  {
    DeviceAllocator alloc;
    t = alloc.Allocate({2}, DataType::kFloat32);
  }
  t.Fill(1.0);
  EXPECT_EQ(t.data<float>()[1], 1.0f);
}

}  // namespace
}  // namespace ofl
