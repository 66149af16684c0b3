// Slicing: from a logical shape, a hierarchy and an NdSbp, the physical
// shape and offset every rank holds (DESIGN.md section 3). Splits are
// balanced like numpy's array_split: n over p gives the first n % p parts one
// extra row; a part may be empty. Hierarchy axes are applied outer to inner,
// so (S(0), S(0)) on [2, 2] cuts axis 0 in two, then each half in two.
// Pure functions; thread-safe.
#pragma once

#include <vector>

#include "oneflow_lite/core/sbp.h"
#include "oneflow_lite/core/shape.h"

namespace ofl {

struct Range {
  int64_t begin = 0;
  int64_t size = 0;
};

// Part `index` of `n` items cut into `parts` balanced parts.
Range BalancedPart(int64_t n, int64_t parts, int64_t index);

struct TensorSlice {
  Shape shape;                  // physical shape on the rank
  std::vector<int64_t> offset;  // where it starts in the logical tensor
  bool partial = false;         // true when some axis is P (values are addends)
};

// Checks that `nd_sbp` fits `logical` and `hierarchy`; names `what`.
Status ValidateNdSbp(const Shape& logical, const Shape& hierarchy, const NdSbp& nd_sbp,
                     const std::string& what);

// The slice of the rank at hierarchy coordinates `coords` (CHECKs validity).
TensorSlice SliceOf(const Shape& logical, const Shape& hierarchy, const NdSbp& nd_sbp,
                    const std::vector<int64_t>& coords);

}  // namespace ofl
