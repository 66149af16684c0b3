#include "oneflow_lite/core/random.h"

#include <cmath>

namespace ofl {

namespace {
constexpr uint32_t kMul0 = 0xD2511F53u;
constexpr uint32_t kMul1 = 0xCD9E8D57u;
constexpr uint32_t kWeyl0 = 0x9E3779B9u;
constexpr uint32_t kWeyl1 = 0xBB67AE85u;

inline void MulHiLo(uint32_t a, uint32_t b, uint32_t* hi, uint32_t* lo) {
  uint64_t p = static_cast<uint64_t>(a) * b;
  *hi = static_cast<uint32_t>(p >> 32);
  *lo = static_cast<uint32_t>(p);
}
}  // namespace

PhiloxCounter Philox4x32(PhiloxCounter c, PhiloxKey k) {
  for (int round = 0; round < 10; ++round) {
    uint32_t hi0, lo0, hi1, lo1;
    MulHiLo(kMul0, c[0], &hi0, &lo0);
    MulHiLo(kMul1, c[2], &hi1, &lo1);
    c = {hi1 ^ c[1] ^ k[0], lo1, hi0 ^ c[3] ^ k[1], lo0};
    k[0] += kWeyl0;
    k[1] += kWeyl1;
  }
  return c;
}

PhiloxCounter RandomBits(uint64_t seed, uint64_t stream, uint64_t index) {
  PhiloxCounter ctr = {static_cast<uint32_t>(index), static_cast<uint32_t>(index >> 32),
                       static_cast<uint32_t>(stream), static_cast<uint32_t>(stream >> 32)};
  PhiloxKey key = {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)};
  return Philox4x32(ctr, key);
}

float UniformFloat(uint64_t seed, uint64_t stream, uint64_t index) {
  return static_cast<float>(RandomBits(seed, stream, index)[0] >> 8) * (1.0f / 16777216.0f);
}

double Normal(uint64_t seed, uint64_t stream, uint64_t index) {
  PhiloxCounter r = RandomBits(seed, stream, index);
  // u1 in (0, 1], u2 in [0, 1), 53 bits each from two words.
  uint64_t a = (static_cast<uint64_t>(r[0]) << 21) ^ (r[1] >> 11);
  uint64_t b = (static_cast<uint64_t>(r[2]) << 21) ^ (r[3] >> 11);
  double u1 = (static_cast<double>(a & ((1ull << 53) - 1)) + 1.0) / 9007199254740992.0;
  double u2 = static_cast<double>(b & ((1ull << 53) - 1)) / 9007199254740992.0;
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
}

}  // namespace ofl
