// Checked size arithmetic (core/checked_math.h, Shape::CheckedNumElements,
// CheckedNumBytes, CheckAllocation) at hand-worked int64 boundaries:
// INT64_MAX = 9223372036854775807, 4 * (2^62 + 1) = 2^64 + 4 =
// 18446744073709551620, 2^40 * 2^40 = 2^80 = 1208925819614629174706176.
#include "oneflow_lite/core/checked_math.h"

#include <gtest/gtest.h>

#include <cmath>

#include "oneflow_lite/core/shape.h"

namespace ofl {
namespace {

constexpr int64_t kMax = INT64_MAX;
constexpr int64_t kMin = INT64_MIN;
constexpr int64_t k2p62 = int64_t{1} << 62;

std::string Message(const Status& s) { return s.ok() ? "OK" : s.message(); }

TEST(CheckedMathTest, MultipliesUpToInt64Max) {
  EXPECT_EQ(MulInt64(kMax, 1), kMax);
  EXPECT_EQ(MulInt64(3037000499, 3037000499), 9223372030926249001);  // floor(sqrt(2^63 - 1))^2
  EXPECT_FALSE(MulInt64(3037000500, 3037000500).has_value());        // 9223372037000250000
  EXPECT_FALSE(MulInt64(kMax, 2).has_value());
  EXPECT_FALSE(MulInt64(4, k2p62 + 1).has_value());
  EXPECT_EQ(MulInt64(-2, k2p62), kMin);  // -2^63 fits; +2^63 does not
  EXPECT_FALSE(MulInt64(2, k2p62).has_value());
  EXPECT_EQ(MulInt64(0, kMax), 0);
  EXPECT_EQ(AddInt64(kMax - 1, 1), kMax);
  EXPECT_FALSE(AddInt64(kMax, 1).has_value());
  EXPECT_FALSE(AddInt64(kMin, -1).has_value());
}

TEST(CheckedMathTest, CheckedFormsNameWhatOverflowed) {
  Maybe<int64_t> m = CheckedMul(4, k2p62 + 1, "reshape 'r'");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().message(),
            "reshape 'r': 4 * 4611686018427387905 = 18446744073709551620 is more than int64 can "
            "hold");
  Maybe<int64_t> a = CheckedAdd(kMax, 1, "concat");
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.status().message(),
            "concat: 9223372036854775807 + 1 = 9223372036854775808 is more than int64 can hold");
  Maybe<int64_t> b = CheckedAdd(kMin, -1, "x");
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().message(),
            "x: -9223372036854775808 + -1 = -9223372036854775809 is less than int64 can hold");
  EXPECT_EQ(CheckedMul(6, 7, "x").value(), 42);
  EXPECT_EQ(CheckedAdd(kMax - 5, 5, "x").value(), kMax);
}

TEST(CheckedMathTest, SaturatesInsteadOfWrapping) {
  EXPECT_EQ(SaturatingMul(4, k2p62 + 1), kMax);
  EXPECT_EQ(SaturatingMul(-4, k2p62 + 1), kMin);
  EXPECT_EQ(SaturatingMul(3, 5), 15);
  EXPECT_EQ(SaturatingAdd(kMax, kMax), kMax);
  EXPECT_EQ(SaturatingAdd(kMin, -1), kMin);
  EXPECT_EQ(SaturatingAdd(kMax, -1), kMax - 1);
  // 2^64 as a double (16 bytes for each of 2^60 parameters): a plain cast
  // is undefined and gives INT64_MIN on x86.
  EXPECT_EQ(SaturatingFromDouble(18446744073709551616.0), kMax);
  EXPECT_EQ(SaturatingFromDouble(9223372036854775808.0), kMax);  // 2^63
  EXPECT_EQ(SaturatingFromDouble(4611686018427387904.0), k2p62);
  EXPECT_EQ(SaturatingFromDouble(std::nan("")), kMax);
  EXPECT_EQ(SaturatingFromDouble(-1e30), kMin);
}

TEST(CheckedMathTest, ProductTextIsExactAtAnySize) {
  EXPECT_EQ(ProductText({}), "1");
  EXPECT_EQ(ProductText({4, k2p62 + 1}), "18446744073709551620");
  EXPECT_EQ(ProductText({int64_t{1} << 40, int64_t{1} << 40}), "1208925819614629174706176");
  EXPECT_EQ(ProductText({kMax, kMax}), "85070591730234615847396907784232501249");
  EXPECT_EQ(ProductText({-3, 1000000000}), "-3000000000");
  EXPECT_EQ(ProductText({1000000000, 1000000000, 0}), "0");
  EXPECT_EQ(ProductText({kMin}), "-9223372036854775808");
}

TEST(ShapeSizeTest, CountsUpToInt64Max) {
  EXPECT_EQ(Shape({kMax}).CheckedNumElements("t").value(), kMax);
  EXPECT_EQ(Shape({kMax, 1, 1}).CheckedNumElements("t").value(), kMax);
  // A zero extent anywhere makes the count 0, even after a huge prefix.
  EXPECT_EQ(Shape({k2p62, 4, 0}).CheckedNumElements("t").value(), 0);
  EXPECT_EQ(Shape({k2p62, 4, 0}).NumElements(), 0);
  EXPECT_EQ(Shape({}).CheckedNumElements("t").value(), 1);
}

TEST(ShapeSizeTest, ErrorsNameTheTensorAndTheShape) {
  EXPECT_EQ(Message(Shape({4, k2p62 + 1}).CheckedNumElements("reshape 'r'").status()),
            "reshape 'r': shape (4, 4611686018427387905) has 18446744073709551620 elements, more "
            "than int64 can hold");
  EXPECT_EQ(
      Message(
          Shape({int64_t{1} << 40, int64_t{1} << 40}).CheckedNumElements("variable 'w'").status()),
      "variable 'w': shape (1099511627776, 1099511627776) has 1208925819614629174706176 "
      "elements, more than int64 can hold");
  EXPECT_EQ(Message(Shape({2, -3}).CheckedNumElements("input 'x'").status()),
            "input 'x': shape (2, -3) has the negative extent -3 at axis 1");
}

TEST(ShapeSizeTest, BytesFitInt64) {
  // 2^61 float32 elements = 2^63 bytes: the count fits, the bytes do not.
  const Shape s({int64_t{1} << 61});
  EXPECT_EQ(CheckedNumBytes(s, DataType::kInt32, "t").status().ok(), false);
  EXPECT_EQ(Message(CheckShape(s, DataType::kFloat32, "zeros")),
            "zeros: shape (2305843009213693952) of float32 takes 9223372036854775808 bytes, more "
            "than int64 can hold");
  EXPECT_EQ(CheckedNumBytes(s, DataType::kFloat16, "t").value(), k2p62);
  EXPECT_EQ(CheckedNumBytes(Shape({kMax / 8}), DataType::kFloat64, "t").value(), kMax / 8 * 8);
  EXPECT_FALSE(CheckedNumBytes(Shape({kMax / 8 + 1}), DataType::kFloat64, "t").ok());
}

TEST(ShapeSizeTest, AllocationsStayUnder256TiB) {
  EXPECT_TRUE(CheckAllocation(Shape({int64_t{1} << 46}), DataType::kFloat32, "t").ok());  // 2^48
  const Status s = CheckAllocation(Shape({(int64_t{1} << 46) + 1}), DataType::kFloat32, "zeros");
  EXPECT_EQ(Message(s),
            "zeros: shape (70368744177665) of float32 takes 281474976710660 bytes, more than the "
            "largest allocation (281474976710656 bytes = 256 TiB)");
}

TEST(ShapeSizeDeathTest, UncheckedCountsCheckInsteadOfWrapping) {
  EXPECT_DEATH(Shape({4, k2p62 + 1}).NumElements(), "overflows int64");
}

}  // namespace
}  // namespace ofl
