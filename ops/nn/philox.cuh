// Philox4x32-10 as a __host__ __device__ function: the same counter stream
// as oneflow_lite/core/random.h (RandomBits, UniformFloat), so a CUDA kernel
// draws bit for bit the numbers the CPU kernel draws for (seed, stream,
// logical index). tests/cpp/cuda/philox_test.cpp holds the host build of
// this copy against core's. Header-only; pure.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace ofl::cuda {

struct PhiloxBits {
  uint32_t w[4];
};

__host__ __device__ inline PhiloxBits RandomBits(uint64_t seed, uint64_t stream, uint64_t index) {
  uint32_t c0 = static_cast<uint32_t>(index), c1 = static_cast<uint32_t>(index >> 32);
  uint32_t c2 = static_cast<uint32_t>(stream), c3 = static_cast<uint32_t>(stream >> 32);
  uint32_t k0 = static_cast<uint32_t>(seed), k1 = static_cast<uint32_t>(seed >> 32);
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = static_cast<uint64_t>(0xD2511F53u) * c0;
    const uint64_t p1 = static_cast<uint64_t>(0xCD9E8D57u) * c2;
    const uint32_t hi0 = static_cast<uint32_t>(p0 >> 32), lo0 = static_cast<uint32_t>(p0);
    const uint32_t hi1 = static_cast<uint32_t>(p1 >> 32), lo1 = static_cast<uint32_t>(p1);
    const uint32_t n0 = hi1 ^ c1 ^ k0, n2 = hi0 ^ c3 ^ k1;
    c0 = n0;
    c1 = lo1;
    c2 = n2;
    c3 = lo0;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return {{c0, c1, c2, c3}};
}

// Uniform in [0, 1): the top 24 bits of word 0, times 2^-24 (core's UniformFloat).
__host__ __device__ inline float UniformFloat(uint64_t seed, uint64_t stream, uint64_t index) {
  return static_cast<float>(RandomBits(seed, stream, index).w[0] >> 8) * (1.0f / 16777216.0f);
}

}  // namespace ofl::cuda
