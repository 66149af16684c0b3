// ReducePlan: what reduce_sum and reduce_mean compute on their local x, the
// shape x is summed to (a reduced axis becomes 1; no axes reduces all) and
// the factor the sum is scaled by (1/count for reduce_mean, over the logical
// tensor's count: a rank holding a split of a reduced axis gives its partial
// sum of the mean, the S -> P signature). Shared by the CPU and CUDA kernels (reduce_cpu.cpp,
// reduce_cuda.cu), which hand it to their ReduceSumTo. Host code, no CUDA
// types; plain values.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "ops/kernel.h"
#include "ops/math/axes.h"

namespace ofl {

struct ReducePlan {
  Shape kept;
  double scale = 1.0;
};

// x = kc.in(0); the axes attr was validated by the op's inference.
inline ReducePlan PlanReduce(const KernelContext& kc, bool is_mean) {
  const Shape& x = kc.in(0).shape();
  const Shape logical = kc.input_logical_shape(0);  // x's own shape when whole
  std::vector<int64_t> axes =
      math::NormalizedAxesUnchecked(kc.attr().Get<std::vector<int64_t>>("axes"), x.ndim());
  std::vector<int64_t> kept = x.dims();
  int64_t count = 1;
  for (int64_t a = 0; a < x.ndim(); ++a) {
    if (axes.empty() || std::binary_search(axes.begin(), axes.end(), a)) {
      count *= logical[a];
      kept[a] = 1;
    }
  }
  return {Shape(kept), is_mean ? 1.0 / static_cast<double>(count) : 1.0};
}

}  // namespace ofl
