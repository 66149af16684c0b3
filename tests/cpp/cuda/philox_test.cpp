// ops/nn/philox.cuh (the dropout kernel's Philox, built here for the host)
// draws the very bits of core/random.h for every (seed, stream, index) tried,
// so CUDA dropout masks equal the CPU's. No device needed.
#include "ops/nn/philox.cuh"

#include <gtest/gtest.h>

#include <random>

#include "oneflow_lite/core/random.h"

namespace ofl {
namespace {

TEST(CudaPhilox, HostBuildEqualsCoreRandom) {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 20000; ++trial) {
    const uint64_t seed = trial < 100 ? trial : rng();
    const uint64_t stream = trial % 3 == 0 ? rng() : trial % 17;
    const uint64_t index = trial % 2 == 0 ? rng() : static_cast<uint64_t>(trial);
    const PhiloxCounter want = RandomBits(seed, stream, index);
    const cuda::PhiloxBits got = cuda::RandomBits(seed, stream, index);
    for (int w = 0; w < 4; ++w) {
      ASSERT_EQ(got.w[w], want[w]) << "seed " << seed << " stream " << stream << " index " << index;
    }
    ASSERT_EQ(cuda::UniformFloat(seed, stream, index), UniformFloat(seed, stream, index));
  }
}

// A known answer, so that a change to both copies at once still fails.
TEST(CudaPhilox, KnownAnswer) {
  // Philox4x32-10 of counter 0 and key 0 (Random123's known-answer test).
  const cuda::PhiloxBits bits = cuda::RandomBits(0, 0, 0);
  EXPECT_EQ(bits.w[0], 0x6627e8d5u);
  EXPECT_EQ(bits.w[1], 0xe169c58du);
  EXPECT_EQ(bits.w[2], 0xbc57ac4cu);
  EXPECT_EQ(bits.w[3], 0x9b00dbd8u);
}

}  // namespace
}  // namespace ofl
