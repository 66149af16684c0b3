// CPU kernels of sparse_softmax_cross_entropy and its backward op
// (cross_entropy.cpp registers the ops). Logits are rows of C classes;
// ParallelFor runs over the rows. A label outside [0, C) fails the kernel
// (ops/index_check.h) before any output is written. The row maximum of
// log-sum-exp propagates NaN (a NaN logit makes its row's loss NaN).
// float32 rows take their exps on the active level's vector lanes
// (ops/vector_math.h). The backward op takes one exp per logit: softmax is
// exp(x - max) over its sum, not exp(x - log-sum-exp), a second pass.
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "ops/index_check.h"
#include "ops/kernel.h"
#include "ops/nan_compare.h"
#include "ops/nn/logit_rows.h"
#include "ops/parallel.h"
#include "ops/vector_math.h"

namespace ofl {

namespace {

template <typename T>
T LogSumExp(const T* row, int64_t classes) {
  T max = -std::numeric_limits<T>::infinity();
  for (int64_t c = 0; c < classes; ++c) max = NanMax(max, row[c]);
  T sum = 0;
  for (int64_t c = 0; c < classes; ++c) sum += std::exp(row[c] - max);
  return max + std::log(sum);
}

// float rows: the exps on the active level's vector lanes (ops/vector_math.h),
// written to `scratch` (a row of `classes`).
float LogSumExpVec(const float* row, int64_t classes, float* scratch) {
  const float max = vec::NanMaxOf(row, classes);
  return max + std::log(vec::ExpShiftedSum(row, max, scratch, classes));
}

// Whether every label of k.in(1) is in [0, classes); if not, k has failed
// (ops/index_check.h) and nothing may be written.
template <typename L>
bool LabelsInRange(KernelContext& k, int64_t classes) {
  const Tensor& l = k.in(1);
  return CheckIndexRange<L>(k, "labels", l, classes, "logits.shape[-1]",
                            LeadingOffset(k, l.shape().ndim()));
}

template <typename T, typename L>
void Forward(KernelContext& k) {
  const LogitRows shape = LogitRowsOf(k.in(0));
  const int64_t rows = shape.rows, classes = shape.classes;
  if (!LabelsInRange<L>(k, classes)) return;
  const T* logits = k.in(0).data<T>();
  const L* labels = k.in(1).data<L>();
  T* loss = k.out(0).data<T>();
  ParallelFor(
      rows,
      [&](int64_t begin, int64_t end) {
        std::vector<T> scratch(std::is_same_v<T, float> ? classes : 0);
        for (int64_t r = begin; r < end; ++r) {
          const T* row = logits + r * classes;
          T lse;
          if constexpr (std::is_same_v<T, float>) {
            lse = LogSumExpVec(row, classes, scratch.data());
          } else {
            lse = LogSumExp(row, classes);
          }
          loss[r] = lse - row[static_cast<int64_t>(labels[r])];
        }
      },
      std::max<int64_t>(1, kParallelGrain / classes));
}

// out = softmax(row) * dy in one exp pass: out[c] = exp(row[c] - max) with
// their sum, then one scale by dy / sum (the sum is at least 1, from the
// maximum's own term, unless the row is NaN or all -inf: then NaN).
template <typename T>
void SoftmaxTimes(const T* row, int64_t classes, T dy, T* out) {
  T sum = 0;
  if constexpr (std::is_same_v<T, float>) {
    sum = vec::ExpShiftedSum(row, vec::NanMaxOf(row, classes), out, classes);
  } else {
    T max = -std::numeric_limits<T>::infinity();
    for (int64_t c = 0; c < classes; ++c) max = NanMax(max, row[c]);
    for (int64_t c = 0; c < classes; ++c) sum += out[c] = std::exp(row[c] - max);
  }
  const T scale = dy / sum;
  for (int64_t c = 0; c < classes; ++c) out[c] *= scale;
}

template <typename T, typename L>
void Backward(KernelContext& k) {
  const LogitRows shape = LogitRowsOf(k.in(0));
  const int64_t rows = shape.rows, classes = shape.classes;
  if (!LabelsInRange<L>(k, classes)) return;
  const T* logits = k.in(0).data<T>();
  const L* labels = k.in(1).data<L>();
  const T* dy = k.in(2).data<T>();
  T* dlogits = k.out(0).data<T>();
  ParallelFor(
      rows,
      [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r) {
          T* out = dlogits + r * classes;
          SoftmaxTimes(logits + r * classes, classes, dy[r], out);
          out[static_cast<int64_t>(labels[r])] -= dy[r];
        }
      },
      std::max<int64_t>(1, kParallelGrain / classes));
}

void CrossEntropyKernel(KernelContext& k) {
  OFL_DISPATCH_FLOAT(k.in(0).dtype(), T, OFL_DISPATCH_INDEX(k.in(1).dtype(), L, Forward<T, L>(k)));
}

void CrossEntropyGradKernel(KernelContext& k) {
  OFL_DISPATCH_FLOAT(k.in(0).dtype(), T, OFL_DISPATCH_INDEX(k.in(1).dtype(), L, Backward<T, L>(k)));
}

}  // namespace

OFL_REGISTER_KERNEL("sparse_softmax_cross_entropy", DeviceType::kCPU, CrossEntropyKernel);
OFL_REGISTER_KERNEL("sparse_softmax_cross_entropy_grad", DeviceType::kCPU, CrossEntropyGradKernel);

}  // namespace ofl
