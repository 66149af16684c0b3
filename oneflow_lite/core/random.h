// Counter-based random numbers (DESIGN.md section 3): Philox4x32-10
// (Salmon et al., SC'11) keyed by the seed and counted by (element index,
// stream). A value depends only on (seed, stream, logical index), so a model
// draws the same numbers under every strategy and device count. Pure
// functions; thread-safe.
#pragma once

#include <array>
#include <cstdint>

namespace ofl {

using PhiloxCounter = std::array<uint32_t, 4>;
using PhiloxKey = std::array<uint32_t, 2>;

// Ten rounds of Philox4x32 on one counter block.
PhiloxCounter Philox4x32(PhiloxCounter counter, PhiloxKey key);

// Four 32-bit words for element `index` of `stream` under `seed`:
// counter = (index lo, index hi, stream lo, stream hi), key = (seed lo, hi).
PhiloxCounter RandomBits(uint64_t seed, uint64_t stream, uint64_t index);

// Uniform in [0, 1): the top 24 bits of word 0, times 2^-24.
float UniformFloat(uint64_t seed, uint64_t stream, uint64_t index);
// Standard normal by Box-Muller on words 0 and 1 (53-bit uniforms).
double Normal(uint64_t seed, uint64_t stream, uint64_t index);

}  // namespace ofl
