// Comparisons that propagate NaN as numpy's np.maximum / np.max and PyTorch
// do: a NaN operand wins. std::max(a, NaN) returns a, which silently drops
// a NaN (one NaN input row would then train on while the loss looks normal).
// Every kernel that selects by comparison uses these. Header-only; pure.
#pragma once

#include <cmath>

namespace ofl {

// max(a, b), NaN when either is NaN.
template <typename T>
T NanMax(T a, T b) {
  if (std::isnan(b)) return b;
  return a < b ? b : a;  // a NaN: a < b is false, a is returned
}

// min(a, b), NaN when either is NaN.
template <typename T>
T NanMin(T a, T b) {
  if (std::isnan(b)) return b;
  return b < a ? b : a;
}

}  // namespace ofl
