// Range checks of integer index tensors (embedding's ids, cross entropy's
// labels) inside kernels. Indices are the user's data: a bad one is a
// KernelContext::Fail naming the op, the tensor, the index, the value and
// the allowed range, never a CHECK. The scan is serial (one compare per
// index, before the parallel work) so that the first bad index is reported
// whatever the thread count. Header-only; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "ops/kernel.h"

namespace ofl {

// The text of a bad index: "ids[1, 2]=12 is out of range [0, 10)
// (weight.shape[0]=10)" for element `flat_index` (row-major in `shape`) of
// value `value`. `offset`: where this shard starts in the logical tensor,
// one entry per dim (empty: the local index is the logical one). The CPU
// check below and the CUDA kernels' device-side check (index_check_cuda.h)
// both use it, so both give one message.
inline std::string IndexRangeText(const std::string& name, const Shape& shape, int64_t flat_index,
                                  int64_t value, int64_t limit, const std::string& limit_text,
                                  const std::vector<int64_t>& offset) {
  const int64_t ndim = shape.ndim();
  std::vector<int64_t> index(ndim);
  for (int64_t a = ndim - 1, rest = flat_index; a >= 0; --a) {
    index[a] = rest % shape[a];
    rest /= shape[a];
  }
  std::string text;
  for (int64_t a = 0; a < ndim; ++a) {
    const int64_t at = index[a] + (static_cast<int64_t>(offset.size()) == ndim ? offset[a] : 0);
    text += (a > 0 ? ", " : "") + std::to_string(at);
  }
  return StrCat(name, ndim > 0 ? "[" + text + "]" : std::string(), "=", value,
                " is out of range [0, ", limit, ") (", limit_text, "=", limit, ")");
}

// Whether every element of `t` (int32/int64) lies in [0, limit); otherwise
// k.Fail(IndexRangeText(...)) and false.
template <typename I>
bool CheckIndexRange(KernelContext& k, const std::string& name, const Tensor& t, int64_t limit,
                     const std::string& limit_text, const std::vector<int64_t>& offset) {
  const I* x = t.data<I>();
  const int64_t n = t.numel();
  int64_t bad = 0;
  while (bad < n && x[bad] >= 0 && static_cast<int64_t>(x[bad]) < limit) ++bad;
  if (bad == n) return true;
  k.Fail(IndexRangeText(name, t.shape(), bad, static_cast<int64_t>(x[bad]), limit, limit_text,
                        offset));
  return false;
}

// The first `ndim` entries of the kernel's output-0 logical offset: where an
// input that indexes output 0's leading dims starts (empty if unknown).
inline std::vector<int64_t> LeadingOffset(const KernelContext& k, int64_t ndim) {
  if (static_cast<int64_t>(k.logical_offset.size()) < ndim) return {};
  return std::vector<int64_t>(k.logical_offset.begin(), k.logical_offset.begin() + ndim);
}

}  // namespace ofl
