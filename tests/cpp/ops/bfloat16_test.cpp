// bfloat16 conversion (ops/array/bfloat16.h) on hand-worked bit patterns:
// round to nearest, ties to even; NaN stays NaN; overflow gives Inf.
#include "ops/array/bfloat16.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

namespace ofl {
namespace {

TEST(BFloat16Test, RoundsToNearestTiesToEven) {
  EXPECT_EQ(FloatToBFloat16(1.0f), 0x3F80);
  EXPECT_EQ(FloatToBFloat16(1.0f + 0x1p-8f), 0x3F80);             // tie, 0x3F80 is even
  EXPECT_EQ(FloatToBFloat16(1.0f + 3 * 0x1p-8f), 0x3F82);         // tie, up to even 0x3F82
  EXPECT_EQ(FloatToBFloat16(1.0f + 0x1p-8f + 0x1p-20f), 0x3F81);  // above the tie
  EXPECT_EQ(FloatToBFloat16(-2.5f), 0xC020);
  EXPECT_EQ(FloatToBFloat16(-0.0f), 0x8000);
  EXPECT_EQ(BFloat16ToFloat(0x3F81), 1.0f + 0x1p-7f);
}

TEST(BFloat16Test, KeepsNanAndInfAndOverflowsToInf) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_TRUE(std::isnan(BFloat16ToFloat(FloatToBFloat16(nan))));
  EXPECT_TRUE(std::isnan(BFloat16ToFloat(FloatToBFloat16(-nan))));
  // A NaN whose payload sits only in the low 16 bits (0x7F800001) would
  // truncate to Inf; it must come back a NaN.
  const uint32_t low_payload = 0x7F800001u;
  float low_nan;
  std::memcpy(&low_nan, &low_payload, sizeof(low_nan));
  EXPECT_TRUE(std::isnan(BFloat16ToFloat(FloatToBFloat16(low_nan))));
  EXPECT_EQ(FloatToBFloat16(std::numeric_limits<float>::infinity()), 0x7F80);
  EXPECT_EQ(FloatToBFloat16(std::numeric_limits<float>::max()), 0x7F80);
  EXPECT_EQ(FloatToBFloat16(-std::numeric_limits<float>::max()), 0xFF80);
}

}  // namespace
}  // namespace ofl
