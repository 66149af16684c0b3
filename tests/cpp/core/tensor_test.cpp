// Tensor: allocation, alignment, sharing and copying.
#include "oneflow_lite/core/tensor.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace ofl {
namespace {

TEST(TensorTest, AllocatesAlignedAndFills) {
  Tensor t({3, 5}, DataType::kFloat64);
  EXPECT_EQ(t.nbytes(), 120);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t.raw()) % 64, 0u);
  t.Fill(2.5);
  for (int i = 0; i < 15; ++i) EXPECT_EQ(t.data<double>()[i], 2.5);
}

TEST(TensorTest, CopiesShareAndClonesDoNot) {
  Tensor a = Tensor::Zeros({4}, DataType::kInt32);
  Tensor shared = a;
  Tensor clone = a.Clone();
  a.data<int32_t>()[2] = 7;
  EXPECT_EQ(shared.data<int32_t>()[2], 7);
  EXPECT_EQ(clone.data<int32_t>()[2], 0);
  Tensor r = a.Reshaped({2, 2});
  EXPECT_EQ(r.data<int32_t>()[2], 7);
  EXPECT_EQ(r.shape(), (Shape{2, 2}));
}

TEST(TensorTest, DefaultIsUndefined) {
  EXPECT_FALSE(Tensor().defined());
  EXPECT_TRUE(Tensor({0, 3}, DataType::kFloat32).defined());
}

}  // namespace
}  // namespace ofl
