// Checked int64 arithmetic for sizes: element counts, byte sizes and memory.
//
// Sizes are int64_t everywhere; a product of extents given by a user (a
// reshape target, a variable of 2**40 x 2**40) can exceed it, and a wrapped
// count is worse than an error (a 4-element buffer under a huge shape).
// Byte counts use the checked forms (an error naming what overflowed) or,
// where a value is only compared or summed as a cost, the saturating forms
// (clamped to INT64_MAX, which exceeds any real limit). FLOPs and seconds are
// doubles and need neither. ProductText prints an exact product of any size
// for messages. Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "oneflow_lite/core/status.h"

namespace ofl {

inline constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

// a * b and a + b, or nullopt when the result does not fit in int64.
inline std::optional<int64_t> MulInt64(int64_t a, int64_t b) {
  int64_t out = 0;
  if (__builtin_mul_overflow(a, b, &out)) return std::nullopt;
  return out;
}
inline std::optional<int64_t> AddInt64(int64_t a, int64_t b) {
  int64_t out = 0;
  if (__builtin_add_overflow(a, b, &out)) return std::nullopt;
  return out;
}

// The same, as a Status: "<what>: 4 * 4611686018427387905 = 18446744073709551620
// is more than int64 can hold".
Maybe<int64_t> CheckedMul(int64_t a, int64_t b, const std::string& what);
Maybe<int64_t> CheckedAdd(int64_t a, int64_t b, const std::string& what);

// Clamped to [INT64_MIN, INT64_MAX] instead of wrapping.
int64_t SaturatingMul(int64_t a, int64_t b);
int64_t SaturatingAdd(int64_t a, int64_t b);

// A double (a cost in bytes, say) as int64, clamped; NaN and values >= 2^63
// give INT64_MAX (a cast of those would be undefined behaviour).
int64_t SaturatingFromDouble(double value);

// The exact decimal product of `factors` (any size; "1" when empty).
std::string ProductText(const std::vector<int64_t>& factors);

}  // namespace ofl
