// The memory-independent communication lower bound of parallel matrix
// multiplication (Al Daas, Ballard, Grigori, Kumar, Rouse, "Tight
// Memory-Independent Parallel Matrix Multiplication Communication Lower
// Bounds", SPAA 2022 brief announcement, arXiv:2205.13407, Theorem 3).
// The strategy report sets each matmul's predicted communication beside it.
// It knows no op: only the three dimensions and the processor count.
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>

namespace ofl {

// Which of the theorem's three cases applies (the shape of the optimal grid).
enum class MatmulBoundCase {
  kOneLargeDimension,   // 1 <= P <= d1/d2: a 1-D split of the largest dimension
  kTwoLargeDimensions,  // d1/d2 <= P <= d1*d2/d3^2: a 2-D grid
  kThreeDimensions,     // P >= d1*d2/d3^2: a 3-D grid
};

const char* MatmulBoundCaseName(MatmulBoundCase c);  // "1d", "2d", "3d"

struct MatmulBound {
  MatmulBoundCase which = MatmulBoundCase::kOneLargeDimension;
  // The elements one processor must access (Theorem 3's bound before the
  // subtraction) and, the lower bound proper, the elements it must receive
  // or send: accessed minus the share it may hold at the start,
  // (d1*d2 + d1*d3 + d2*d3) / P. In elements, not bytes.
  double accessed_elements = 0;
  double words = 0;
  std::string ToString() const;
};

// C (m x n) = A (m x k) * B (k x n) on `processors` processors, each
// holding 1/P of the data at the start. With d1 >= d2 >= d3 the sorted
// dimensions and S = d1*d2 + d1*d3 + d2*d3, the words W that some
// processor must communicate satisfy (Theorem 3; the three branches meet at
// the case boundaries):
//   1 <= P <= d1/d2:           W >= (d1*d2 + d1*d3)/P + d2*d3      - S/P
//   d1/d2 <= P <= d1*d2/d3^2:  W >= 2*(d1*d2*d3^2/P)^(1/2) + d1*d2/P - S/P
//   P >= d1*d2/d3^2:           W >= 3*(d1*d2*d3/P)^(2/3)           - S/P
// Inputs are CHECKed (>= 1): they come from shapes the registry inferred.
MatmulBound MatmulCommunicationLowerBound(int64_t m, int64_t n, int64_t k, int64_t processors);

}  // namespace ofl
