#include "search/matmul_lower_bound.h"

#include <glog/logging.h>

#include <algorithm>
#include <cmath>
#include <sstream>

namespace ofl {

const char* MatmulBoundCaseName(MatmulBoundCase c) {
  switch (c) {
    case MatmulBoundCase::kOneLargeDimension:
      return "1d";
    case MatmulBoundCase::kTwoLargeDimensions:
      return "2d";
    case MatmulBoundCase::kThreeDimensions:
      return "3d";
  }
  return "?";
}

std::string MatmulBound::ToString() const {
  std::ostringstream out;
  out << words << " words (" << MatmulBoundCaseName(which) << " case, " << accessed_elements
      << " accessed)";
  return out.str();
}

MatmulBound MatmulCommunicationLowerBound(int64_t m, int64_t n, int64_t k, int64_t processors) {
  CHECK_GE(m, 1);
  CHECK_GE(n, 1);
  CHECK_GE(k, 1);
  CHECK_GE(processors, 1);
  double d[3] = {static_cast<double>(m), static_cast<double>(n), static_cast<double>(k)};
  std::sort(d, d + 3, [](double a, double b) { return a > b; });
  const double d1 = d[0], d2 = d[1], d3 = d[2];
  const double p = static_cast<double>(processors);
  const double held = (d1 * d2 + d1 * d3 + d2 * d3) / p;
  MatmulBound bound;
  if (p <= d1 / d2) {
    bound.which = MatmulBoundCase::kOneLargeDimension;
    bound.accessed_elements = (d1 * d2 + d1 * d3) / p + d2 * d3;
  } else if (p <= d1 * d2 / (d3 * d3)) {
    bound.which = MatmulBoundCase::kTwoLargeDimensions;
    bound.accessed_elements = 2 * std::sqrt(d1 * d2 * d3 * d3 / p) + d1 * d2 / p;
  } else {
    bound.which = MatmulBoundCase::kThreeDimensions;
    bound.accessed_elements = 3 * std::cbrt(d1 * d2 * d3 / p) * std::cbrt(d1 * d2 * d3 / p);
  }
  // Rounding may leave a hair below zero at P = 1.
  bound.words = std::max(0.0, bound.accessed_elements - held);
  return bound;
}

}  // namespace ofl
