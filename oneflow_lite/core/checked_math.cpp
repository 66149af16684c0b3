#include "oneflow_lite/core/checked_math.h"

#include <cmath>
#include <cstdio>

namespace ofl {

Maybe<int64_t> CheckedMul(int64_t a, int64_t b, const std::string& what) {
  std::optional<int64_t> out = MulInt64(a, b);
  if (!out) {
    return InvalidArgument(what, ": ", a, " * ", b, " = ", ProductText({a, b}),
                           " is more than int64 can hold");
  }
  return *out;
}

Maybe<int64_t> CheckedAdd(int64_t a, int64_t b, const std::string& what) {
  std::optional<int64_t> out = AddInt64(a, b);
  if (!out) {
    const __int128 sum = static_cast<__int128>(a) + b;
    std::string text;
    for (unsigned __int128 v = sum < 0 ? -sum : sum; v > 0; v /= 10) {
      text.insert(text.begin(), static_cast<char>('0' + static_cast<int>(v % 10)));
    }
    return InvalidArgument(what, ": ", a, " + ", b, " = ", sum < 0 ? "-" : "", text, " is ",
                           sum < 0 ? "less" : "more", " than int64 can hold");
  }
  return *out;
}

int64_t SaturatingMul(int64_t a, int64_t b) {
  std::optional<int64_t> out = MulInt64(a, b);
  if (out) return *out;
  return (a < 0) == (b < 0) ? kInt64Max : std::numeric_limits<int64_t>::min();
}

int64_t SaturatingAdd(int64_t a, int64_t b) {
  std::optional<int64_t> out = AddInt64(a, b);
  if (out) return *out;
  return a > 0 ? kInt64Max : std::numeric_limits<int64_t>::min();
}

int64_t SaturatingFromDouble(double value) {
  if (std::isnan(value) || value >= 9223372036854775808.0) return kInt64Max;  // 2^63
  if (value <= -9223372036854775808.0) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(value);
}

std::string ProductText(const std::vector<int64_t>& factors) {
  // Little-endian base-1e9 digits of the magnitude.
  constexpr uint32_t kBase = 1000000000u;
  std::vector<uint32_t> digits{1};
  bool negative = false;
  for (int64_t f : factors) {
    negative = negative != (f < 0);
    const unsigned __int128 m =
        f < 0 ? static_cast<unsigned __int128>(-static_cast<__int128>(f)) : f;
    unsigned __int128 carry = 0;
    for (uint32_t& d : digits) {
      const unsigned __int128 v = static_cast<unsigned __int128>(d) * m + carry;
      d = static_cast<uint32_t>(v % kBase);
      carry = v / kBase;
    }
    while (carry > 0) {
      digits.push_back(static_cast<uint32_t>(carry % kBase));
      carry /= kBase;
    }
  }
  while (digits.size() > 1 && digits.back() == 0) digits.pop_back();
  if (digits.size() == 1 && digits[0] == 0) negative = false;
  std::string text = (negative ? "-" : "") + std::to_string(digits.back());
  char chunk[16];
  for (size_t i = digits.size() - 1; i-- > 0;) {
    std::snprintf(chunk, sizeof(chunk), "%09u", digits[i]);
    text += chunk;
  }
  return text;
}

}  // namespace ofl
