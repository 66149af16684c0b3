// ofl::Philox4x32 against the Random123 known-answer vectors for
// philox4x32_10, and the counter/key layout of RandomBits and UniformFloat.
#include "oneflow_lite/core/random.h"

#include <gtest/gtest.h>

namespace ofl {
namespace {

struct KnownAnswer {
  PhiloxCounter counter;
  PhiloxKey key;
  PhiloxCounter expected;
};

TEST(PhiloxTest, MatchesRandom123KnownAnswers) {
  const KnownAnswer answers[] = {
      {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
      {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
       {0xffffffff, 0xffffffff},
       {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
      {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
       {0xa4093822, 0x299f31d0},
       {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
  };
  for (const KnownAnswer& a : answers) {
    EXPECT_EQ(Philox4x32(a.counter, a.key), a.expected);
  }
}

// counter = (index lo, index hi, stream lo, stream hi), key = (seed lo, seed hi):
// the third known answer again, through the 64-bit arguments.
TEST(PhiloxTest, RandomBitsLaysOutIndexStreamAndSeed) {
  const uint64_t index = 0x85a308d3243f6a88ull;
  const uint64_t stream = 0x0370734413198a2eull;
  const uint64_t seed = 0x299f31d0a4093822ull;
  const PhiloxCounter expected = {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1};
  EXPECT_EQ(RandomBits(seed, stream, index), expected);
  // The top 24 bits of word 0, times 2^-24.
  EXPECT_EQ(UniformFloat(seed, stream, index), static_cast<float>(0xd16cfe) / 16777216.0f);
}

}  // namespace
}  // namespace ofl
