// bfloat16 <-> float conversion for CPU kernels. bfloat16 is the top 16 bits
// of a float32 (sign, 8 exponent bits, 7 mantissa bits); it is stored as a
// uint16_t. FloatToBFloat16 rounds to nearest, ties to even; a NaN stays a
// (quiet) NaN with its sign; +-Inf and values that round past the largest
// bfloat16 become +-Inf. Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <cstring>

namespace ofl {

inline uint16_t FloatToBFloat16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof(bits));
  if ((bits & 0x7fffffffu) > 0x7f800000u) {  // NaN: keep sign, force a quiet mantissa bit
    return static_cast<uint16_t>((bits >> 16) | 0x0040u);
  }
  const uint32_t lsb = (bits >> 16) & 1u;  // ties go to the even upper half
  bits += 0x7fffu + lsb;
  return static_cast<uint16_t>(bits >> 16);
}

inline float BFloat16ToFloat(uint16_t h) {
  const uint32_t bits = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

}  // namespace ofl
