// The SPAA 2022 matmul bound against values worked out by hand, one per case,
// at the case boundaries (where the branches must meet) and against the
// communication of algorithms that attain it.
#include "search/matmul_lower_bound.h"

#include <gtest/gtest.h>

namespace ofl {
namespace {

TEST(MatmulLowerBound, OneProcessorCommunicatesNothing) {
  MatmulBound b = MatmulCommunicationLowerBound(7, 5, 3, 1);
  EXPECT_EQ(b.which, MatmulBoundCase::kOneLargeDimension);
  EXPECT_DOUBLE_EQ(b.accessed_elements, 7 * 5 + 7 * 3 + 5 * 3);
  EXPECT_DOUBLE_EQ(b.words, 0);
}

TEST(MatmulLowerBound, OneLargeDimensionByHand) {
  // d = (1024, 16, 8), P = 4 <= 1024/16 = 64: (1024*16 + 1024*8)/4 + 16*8
  // = 6144 + 128 = 6272 accessed; held (16384 + 8192 + 128)/4 = 6176; 96 =
  // 16*8*(1 - 1/4): each processor gathers the other 3/4 of the small matrix.
  MatmulBound b = MatmulCommunicationLowerBound(1024, 8, 16, 4);  // order does not matter
  EXPECT_EQ(b.which, MatmulBoundCase::kOneLargeDimension);
  EXPECT_DOUBLE_EQ(b.accessed_elements, 6272);
  EXPECT_DOUBLE_EQ(b.words, 96);
}

TEST(MatmulLowerBound, TwoLargeDimensionsByHand) {
  // d = (64, 64, 2), P = 16: d1/d2 = 1 <= 16 <= 64*64/4 = 1024.
  // 2*sqrt(64*64*4/16) + 64*64/16 = 2*32 + 256 = 320; held (4096+128+128)/16
  // = 272; 48 words.
  MatmulBound b = MatmulCommunicationLowerBound(64, 64, 2, 16);
  EXPECT_EQ(b.which, MatmulBoundCase::kTwoLargeDimensions);
  EXPECT_DOUBLE_EQ(b.accessed_elements, 320);
  EXPECT_DOUBLE_EQ(b.words, 48);
}

TEST(MatmulLowerBound, ThreeDimensionsByHand) {
  // Cube n = 16, P = 8 >= 16*16/256 = 1: 3*(4096/8)^(2/3) = 3*64 = 192;
  // held 3*256/8 = 96; 96 words (a 2x2x2 grid: each processor gathers
  // 3 blocks of 8x8 = 192 elements, of which it held 96 in balanced form).
  MatmulBound b = MatmulCommunicationLowerBound(16, 16, 16, 8);
  EXPECT_EQ(b.which, MatmulBoundCase::kThreeDimensions);
  EXPECT_NEAR(b.accessed_elements, 192, 1e-9);
  EXPECT_NEAR(b.words, 96, 1e-9);
}

TEST(MatmulLowerBound, BranchesMeetAtTheCaseBoundaries) {
  // d = (256, 16, 4): boundaries at P = 16 and P = 256*16/16 = 256.
  // At P = 16 both first branches give 256 + 64 + 64 = 384 accessed
  // (1d: (4096+1024)/16 + 64; 2d: 2*sqrt(256*16*16/16) + 4096/16 = 128 + 256).
  MatmulBound at16 = MatmulCommunicationLowerBound(256, 16, 4, 16);
  EXPECT_NEAR(at16.accessed_elements, 384, 1e-9);
  // At P = 256: 2d gives 2*16 + 16 = 48, 3d gives 3*(16384/256)^(2/3) = 3*16 = 48.
  MatmulBound at256 = MatmulCommunicationLowerBound(256, 16, 4, 256);
  EXPECT_NEAR(at256.accessed_elements, 48, 1e-9);
  MatmulBound just_above = MatmulCommunicationLowerBound(256, 16, 4, 257);
  EXPECT_EQ(just_above.which, MatmulBoundCase::kThreeDimensions);
  EXPECT_NEAR(just_above.accessed_elements, 48, 0.2);
}

TEST(MatmulLowerBound, NeverAboveWhatAnAlgorithmMoves) {
  // Data parallel matmul of a [64, 32] x [32, 32] on P = 4 (A split by rows,
  // B broadcast after an all-gather of its 4 row blocks): each processor
  // receives 3/4 of B = 768 elements. Here d1*d2/d3^2 = 2 < P = 4: the 3d
  // case, 3*(2^16/4)^(2/3) = 3*512*2^(1/3) = 1935.24 accessed, minus
  // (2048 + 2048 + 1024)/4 = 1280 held: 655.24 words, below the 768.
  MatmulBound b = MatmulCommunicationLowerBound(64, 32, 32, 4);
  EXPECT_EQ(b.which, MatmulBoundCase::kThreeDimensions);
  EXPECT_NEAR(b.words, 1536 * 1.2599210498948732 - 1280, 1e-9);
  EXPECT_LE(b.words, 768);
}

}  // namespace
}  // namespace ofl
