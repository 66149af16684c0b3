// Elimination's arithmetic: a step's table from its factors, and the
// workspace buffers it reuses.
#include "search/elimination_kernels.h"

#include <algorithm>
#include <limits>
#include <memory>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace ofl {
namespace elimination_internal {
namespace {

// min over i < n of a[i] + b[i] (infinity when n is 0): two SSE2 lanes twice
// over, else four scalar minima. Either way exactly the smallest sum some i
// gives (a minimum does not depend on the order it is taken in).
inline double MinSum(const double* a, const double* b, int n) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  int i = 0;
#if defined(__SSE2__)
  __m128d m0 = _mm_set1_pd(kInf), m1 = m0;
  for (; i + 4 <= n; i += 4) {
    m0 = _mm_min_pd(_mm_add_pd(_mm_loadu_pd(a + i), _mm_loadu_pd(b + i)), m0);
    m1 = _mm_min_pd(_mm_add_pd(_mm_loadu_pd(a + i + 2), _mm_loadu_pd(b + i + 2)), m1);
  }
  double lanes[2];
  _mm_storeu_pd(lanes, _mm_min_pd(m0, m1));
  double m = std::min(lanes[0], lanes[1]);
  for (; i < n; ++i) m = std::min(m, a[i] + b[i]);
  return m;
#else
  double m0 = kInf, m1 = kInf, m2 = kInf, m3 = kInf;
  for (; i + 4 <= n; i += 4) {
    m0 = std::min(m0, a[i] + b[i]);
    m1 = std::min(m1, a[i + 1] + b[i + 1]);
    m2 = std::min(m2, a[i + 2] + b[i + 2]);
    m3 = std::min(m3, a[i + 3] + b[i + 3]);
  }
  for (; i < n; ++i) m0 = std::min(m0, a[i] + b[i]);
  return std::min(std::min(m0, m1), std::min(m2, m3));
#endif
}

// The first i with a[i] + b[i] == value (`value` from MinSum: there is one).
inline int FirstSumEqual(const double* a, const double* b, int n, double value) {
  int i = 0;
#if defined(__SSE2__)
  const __m128d v = _mm_set1_pd(value);
  for (; i + 2 <= n; i += 2) {
    const int mask =
        _mm_movemask_pd(_mm_cmpeq_pd(_mm_add_pd(_mm_loadu_pd(a + i), _mm_loadu_pd(b + i)), v));
    if (mask != 0) return i + ((mask & 1) != 0 ? 0 : 1);
  }
#endif
  while (a[i] + b[i] != value) ++i;
  return i;
}

// For each of `rows` rows of kx values, `row_stride` apart from `rows0`:
// table[t] = min over c of a[c] + row_t[c], argmin[t] its first c.
void MinSumOfRows(const double* a, int kx, const double* rows0, int64_t row_stride, int64_t rows,
                  double* table, uint16_t* argmin) {
  for (int64_t t = 0; t < rows; ++t) {
    const double* row = rows0 + t * row_stride;
    const double value = MinSum(a, row, kx);
    table[t] = value;
    argmin[t] = static_cast<uint16_t>(FirstSumEqual(a, row, kx, value));
  }
}

// Lays `data` out x-fastest in `out` (its buffers reused): a view when it
// already is, else a copy.
void CopyXFast(const double* data, int64_t x_stride, const int64_t* scope_stride,
               const int64_t* sizes, int m, int kx, std::vector<int64_t>& index, XFastFactor& out) {
  out.strides.assign(m, 0);
  int64_t next = kx;
  for (int j = m - 1; j >= 0; --j) {
    if (scope_stride[j] == 0) continue;
    out.strides[j] = next;
    next *= sizes[j];
  }
  bool packed = x_stride == 1;  // the factor's own layout is the x-fast one
  for (int j = 0; j < m && packed; ++j) packed = scope_stride[j] == out.strides[j];
  if (packed) {
    out.data = data;
    return;
  }
  out.copy.resize(next);
  out.data = out.copy.data();
  double* to_data = out.copy.data();
  index.assign(m, 0);
  for (int64_t from = 0, to = 0; to < next; to += kx) {  // odometer over its own variables
    for (int c = 0; c < kx; ++c) to_data[to + c] = data[from + c * x_stride];
    for (int j = m - 1; j >= 0; --j) {
      if (scope_stride[j] == 0) continue;
      from += scope_stride[j];
      if (++index[j] < sizes[j]) break;
      from -= scope_stride[j] * sizes[j];
      index[j] = 0;
    }
  }
}

// One run of the table along the last scope variable: for each of its
// `last` values t, the best of partial[c] + the inner copies at
// offsets[f] + t * (their last stride).
void MinOverLast(const double* partial, int kx, const XFastFactor* inner, int num_inner,
                 const int64_t* offsets, int m, int64_t last, double* sum, double* table,
                 uint16_t* argmin) {
  if (num_inner == 0) {
    const int best = std::min_element(partial, partial + kx) - partial;
    std::fill(table, table + last, partial[best]);
    std::fill(argmin, argmin + last, static_cast<uint16_t>(best));
    return;
  }
  if (num_inner == 1) {
    MinSumOfRows(partial, kx, inner[0].data + offsets[0], inner[0].strides[m - 1], last, table,
                 argmin);
    return;
  }
  for (int64_t t = 0; t < last; ++t) {
    std::copy(partial, partial + kx, sum);
    for (int f = 0; f < num_inner; ++f) {
      const double* row = inner[f].data + offsets[f] + t * inner[f].strides[m - 1];
      for (int c = 0; c < kx; ++c) sum[c] += row[c];
    }
    const int best = std::min_element(sum, sum + kx) - sum;
    table[t] = sum[best];
    argmin[t] = static_cast<uint16_t>(best);
  }
}

}  // namespace

bool MinOverFactors(const double* unary, int kx, const double* const* data, int nf,
                    const int64_t* x_stride, const int64_t* scope_stride, const int64_t* sizes,
                    int m, double* table, int64_t total, uint16_t* argmin,
                    const std::function<bool()>* stop, EliminationWorkspace::Buffers& b) {
  if (m == 0) {
    int best = std::min_element(unary, unary + kx) - unary;
    table[0] = unary[best];
    argmin[0] = static_cast<uint16_t>(best);
    return true;
  }
  if (static_cast<int>(b.copies.size()) < nf) b.copies.resize(nf);
  int num_outer = 0;  // copies [0, num_outer) lack the last scope variable, the rest have it
  for (int pass = 0; pass < 2; ++pass) {
    for (int f = 0, at = pass == 0 ? 0 : num_outer; f < nf; ++f) {
      const int64_t* strides = scope_stride + static_cast<size_t>(f) * m;
      if ((strides[m - 1] == 0) != (pass == 0)) continue;
      CopyXFast(data[f], x_stride[f], strides, sizes, m, kx, b.index, b.copies[at++]);
      if (pass == 0) ++num_outer;
    }
  }
  const XFastFactor* outer = b.copies.data();
  const XFastFactor* inner = outer + num_outer;
  const int num_inner = nf - num_outer;
  const int64_t last = sizes[m - 1];
  b.index.assign(m, 0);
  b.offsets.assign(nf, 0);  // each copy's offset at the outer positions, kept in step
  b.partial.resize(kx);
  b.sum.resize(kx);
  int64_t* index = b.index.data();
  int64_t* offsets = b.offsets.data();
  double* partial = b.partial.data();
  double* sum = b.sum.data();
  constexpr int64_t kAskEvery = int64_t{1} << 16;
  for (int64_t t0 = 0, asked = 0; t0 < total; t0 += last) {
    if (stop != nullptr && t0 - asked >= kAskEvery) {
      asked = t0;
      if ((*stop)()) return false;
    }
    std::copy(unary, unary + kx, partial);
    for (int f = 0; f < num_outer; ++f) {
      const double* row = outer[f].data + offsets[f];
      for (int c = 0; c < kx; ++c) partial[c] += row[c];
    }
    MinOverLast(partial, kx, inner, num_inner, offsets + num_outer, m, last, sum, table + t0,
                argmin + t0);
    for (int j = m - 2; j >= 0; --j) {  // advance the odometer over the outer positions
      const bool carry = ++index[j] == sizes[j];
      for (int f = 0; f < nf; ++f) {
        offsets[f] += carry ? -outer[f].strides[j] * (sizes[j] - 1) : outer[f].strides[j];
      }
      if (!carry) break;
      index[j] = 0;
    }
  }
  return true;
}

void MinOverOneFactor(const double* unary, int kx, const double* data, int64_t x_stride,
                      int64_t s_stride, int64_t s_size, double* table, uint16_t* argmin) {
  if (x_stride == 1) {
    MinSumOfRows(unary, kx, data, s_stride, s_size, table, argmin);
    return;
  }
  CHECK_EQ(s_stride, 1);
  std::fill(table, table + s_size, std::numeric_limits<double>::infinity());
  std::fill(argmin, argmin + s_size, uint16_t{0});
  for (int c = 0; c < kx; ++c) {
    const double* row = data + c * x_stride;
    for (int64_t t = 0; t < s_size; ++t) {
      double v = unary[c] + row[t];
      if (v < table[t]) {
        table[t] = v;
        argmin[t] = static_cast<uint16_t>(c);
      }
    }
  }
}

}  // namespace elimination_internal

// A buffer of at least `entries` (contents unspecified): the smallest spare
// one that is large enough, else a new one.
std::vector<double> EliminationWorkspace::Buffers::Take(int64_t entries) {
  int best = -1;
  for (int i = 0; i < static_cast<int>(spare.size()); ++i) {
    const int64_t size = spare[i].size();
    if (size >= entries && (best < 0 || size < static_cast<int64_t>(spare[best].size()))) {
      best = i;
    }
  }
  if (best < 0) return std::vector<double>(entries);
  std::vector<double> out = std::move(spare[best]);
  spare[best] = std::move(spare.back());
  spare.pop_back();
  spare_entries -= out.size();
  return out;
}
void EliminationWorkspace::Buffers::Give(std::vector<double>& buffer) {
  // Only large buffers are worth keeping (small ones come cheaply from
  // malloc's own caches), and a few of them: Take scans the list.
  constexpr int64_t kSpareEntries = int64_t{1} << 23, kLeastPooled = 1024;
  constexpr size_t kSpareBuffers = 16;
  const int64_t size = buffer.size();
  if (size < kLeastPooled || spare.size() >= kSpareBuffers ||
      spare_entries + size > kSpareEntries) {
    std::vector<double>().swap(buffer);
    return;
  }
  spare_entries += size;
  spare.push_back(std::move(buffer));
  buffer = std::vector<double>();
}

EliminationWorkspace::EliminationWorkspace() : buffers_(std::make_unique<Buffers>()) {}
EliminationWorkspace::~EliminationWorkspace() = default;
EliminationWorkspace::EliminationWorkspace(EliminationWorkspace&&) noexcept = default;
EliminationWorkspace& EliminationWorkspace::operator=(EliminationWorkspace&&) noexcept = default;

double MinOfSums(const double* a, const double* b, int n) {
  return elimination_internal::MinSum(a, b, n);
}

}  // namespace ofl
