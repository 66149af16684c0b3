// math::ReduceSumTo (broadcast_loops.h) on the CPU. The axes are merged
// into alternating kept / reduced groups; then one of three loops runs:
// - the innermost group reduced, one output: fixed blocks of the flat input
//   summed in parallel, the block sums added in block order;
// - the innermost group reduced, several outputs: each output's elements
//   summed in order of the reduced offsets;
// - the innermost group kept (a bias gradient: (rows, C) -> (C)): fixed
//   blocks of kRowBlock reduced rows summed in parallel into per-block
//   partial rows, which are then added in block order (up to kRowBlock
//   rows: summed in row order straight into each output chunk's sums).
// Contiguous runs are summed in kLanes interleaved double lanes (lane l
// takes elements l, l + kLanes, ...), the lanes added in lane order at the
// end: the same arithmetic whatever vector width runs it, so every level of
// ops/cpu_isa.h gives bitwise the same sums, and the loops vectorise.
// Row adds (acc[j] += x[j]) are compiled for every level.
#include <algorithm>
#include <vector>

#include "ops/cpu_isa.h"
#include "ops/math/broadcast_loops.h"
#include "ops/parallel.h"

namespace ofl::math {

namespace {

constexpr int kLanes = 8;
constexpr int64_t kRowBlock = 64;

// The sum of p[0, n) in kLanes interleaved lanes, then the lanes in order.
template <typename T>
inline __attribute__((always_inline)) double LaneSum(const T* p, int64_t n) {
  double lanes[kLanes] = {};
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes) {
    for (int l = 0; l < kLanes; ++l) lanes[l] += static_cast<double>(p[j + l]);
  }
  for (int l = 0; j < n; ++j, ++l) lanes[l] += static_cast<double>(p[j]);
  double s = 0;
  for (double l : lanes) s += l;
  return s;
}

// acc[j] += x[base + offsets[i] + j] for every i < count, j < len.
template <typename T>
inline __attribute__((always_inline)) void AddRows(const T* x, int64_t base, const int64_t* offsets,
                                                   int64_t count, int64_t len, double* acc) {
  for (int64_t i = 0; i < count; ++i) {
    const T* p = x + base + offsets[i];
    for (int64_t j = 0; j < len; ++j) acc[j] += static_cast<double>(p[j]);
  }
}

template <typename T>
struct Loops {
  using LaneSumFn = double (*)(const T*, int64_t);
  using AddRowsFn = void (*)(const T*, int64_t, const int64_t*, int64_t, int64_t, double*);
  LaneSumFn lane_sum;
  AddRowsFn add_rows;
};

template <typename T>
OFL_TARGET_AVX512 double LaneSum512(const T* p, int64_t n) {
  return LaneSum(p, n);
}
template <typename T>
OFL_TARGET_AVX2 double LaneSum256(const T* p, int64_t n) {
  return LaneSum(p, n);
}
template <typename T>
double LaneSumBase(const T* p, int64_t n) {
  return LaneSum(p, n);
}
template <typename T>
OFL_TARGET_AVX512 void AddRows512(const T* x, int64_t base, const int64_t* o, int64_t count,
                                  int64_t len, double* acc) {
  AddRows(x, base, o, count, len, acc);
}
template <typename T>
OFL_TARGET_AVX2 void AddRows256(const T* x, int64_t base, const int64_t* o, int64_t count,
                                int64_t len, double* acc) {
  AddRows(x, base, o, count, len, acc);
}
template <typename T>
void AddRowsBase(const T* x, int64_t base, const int64_t* o, int64_t count, int64_t len,
                 double* acc) {
  AddRows(x, base, o, count, len, acc);
}

template <typename T>
Loops<T> LoopsFor() {
  return {PickByCpuIsa<typename Loops<T>::LaneSumFn>(LaneSum512<T>, LaneSum256<T>, LaneSumBase<T>),
          PickByCpuIsa<typename Loops<T>::AddRowsFn>(AddRows512<T>, AddRows256<T>, AddRowsBase<T>)};
}

// The axes of x merged into alternating kept / reduced groups, the x
// offsets of every combination of the reduced groups (the innermost one
// excluded when it is reduced: it runs contiguous) and of the kept groups.
struct ReduceLayout {
  bool inner_reduced = false;
  int64_t inner = 1;
  std::vector<int64_t> reduced_offsets{0};
  std::vector<int64_t> kept_dims, kept_stride;

  // x offset of output element o (o indexes the kept groups, contiguous).
  int64_t KeptOffset(int64_t o) const {
    int64_t off = 0;
    for (int64_t i = static_cast<int64_t>(kept_dims.size()) - 1; i >= 0; --i) {
      off += (o % kept_dims[i]) * kept_stride[i];
      o /= kept_dims[i];
    }
    return off;
  }
};

ReduceLayout LayoutOf(const Shape& x_shape, const Shape& kept) {
  std::vector<int64_t> dims;
  std::vector<bool> reduced;
  for (int64_t a = 0; a < x_shape.ndim(); ++a) {
    CHECK(kept[a] == 1 || kept[a] == x_shape[a]) << kept << " is not reducible from " << x_shape;
    if (x_shape[a] == 1) continue;  // size-1 axes dropped
    const bool r = kept[a] == 1;
    if (!dims.empty() && reduced.back() == r) {
      dims.back() *= x_shape[a];
    } else {
      dims.push_back(x_shape[a]);
      reduced.push_back(r);
    }
  }
  ReduceLayout l;
  const int64_t g = static_cast<int64_t>(dims.size());
  std::vector<int64_t> x_stride(g, 1);
  for (int64_t i = g - 2; i >= 0; --i) x_stride[i] = x_stride[i + 1] * dims[i + 1];
  l.inner_reduced = g > 0 && reduced.back();
  l.inner = g > 0 ? dims.back() : 1;
  for (int64_t i = 0; i < g; ++i) {
    if (!reduced[i]) {
      l.kept_dims.push_back(dims[i]);
      l.kept_stride.push_back(x_stride[i]);
      continue;
    }
    if (i == g - 1) break;
    std::vector<int64_t> next;
    next.reserve(l.reduced_offsets.size() * dims[i]);
    for (int64_t base : l.reduced_offsets) {
      for (int64_t j = 0; j < dims[i]; ++j) next.push_back(base + j * x_stride[i]);
    }
    l.reduced_offsets.swap(next);
  }
  return l;
}

template <typename T>
void SumInnerReduced(const T* x, const ReduceLayout& l, int64_t num_x, int64_t num_out, T* out,
                     double scale, const Loops<T>& loops) {
  if (num_out == 1 && num_x > kParallelGrain) {
    // One output: partial sums over fixed blocks of the contiguous input.
    const int64_t blocks = (num_x + kParallelGrain - 1) / kParallelGrain;
    std::vector<double> partial(blocks);
    ParallelFor(
        blocks,
        [&](int64_t b0, int64_t b1) {
          for (int64_t b = b0; b < b1; ++b) {
            const int64_t begin = b * kParallelGrain;
            partial[b] = loops.lane_sum(x + begin, std::min(num_x, begin + kParallelGrain) - begin);
          }
        },
        1);
    double s = 0;
    for (double p : partial) s += p;
    out[0] = static_cast<T>(s * scale);
    return;
  }
  const int64_t per_out = num_x / num_out;
  ParallelFor(
      num_out,
      [&](int64_t b, int64_t e) {
        for (int64_t o = b; o < e; ++o) {
          const int64_t base = l.KeptOffset(o);
          double s = 0;
          for (int64_t r : l.reduced_offsets) s += loops.lane_sum(x + base + r, l.inner);
          out[o] = static_cast<T>(s * scale);
        }
      },
      std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(1, per_out)));
}

// Innermost group kept: whole contiguous rows of x added into rows of out,
// the reduced offsets taken kRowBlock at a time (one partial row set per
// block, summed in parallel), the blocks' partials then added in order.
template <typename T>
void SumInnerKept(const T* x, const ReduceLayout& l, int64_t num_out, T* out, double scale,
                  const Loops<T>& loops) {
  const int64_t count = static_cast<int64_t>(l.reduced_offsets.size());
  const int64_t blocks = (count + kRowBlock - 1) / kRowBlock;
  const int64_t out_rows = num_out / l.inner;
  if (blocks == 1) {  // few reduced rows: each output chunk sums them into its own accumulator
    ParallelFor(
        num_out,
        [&](int64_t b, int64_t e) {
          std::vector<double> acc;
          for (int64_t o = b; o < e;) {
            const int64_t len = std::min(l.inner - o % l.inner, e - o);
            acc.assign(len, 0.0);
            loops.add_rows(x, l.KeptOffset(o), l.reduced_offsets.data(), count, len, acc.data());
            for (int64_t j = 0; j < len; ++j) out[o + j] = static_cast<T>(acc[j] * scale);
            o += len;
          }
        },
        std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(1, count)));
    return;
  }
  std::vector<double> partial(static_cast<size_t>(blocks * num_out), 0.0);
  ParallelFor(
      blocks * out_rows,
      [&](int64_t t0, int64_t t1) {
        for (int64_t t = t0; t < t1; ++t) {
          const int64_t b = t / out_rows, row = t % out_rows;
          const int64_t first = b * kRowBlock, n = std::min(count, first + kRowBlock) - first;
          loops.add_rows(x, l.KeptOffset(row * l.inner), l.reduced_offsets.data() + first, n,
                         l.inner, partial.data() + b * num_out + row * l.inner);
        }
      },
      std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(1, kRowBlock * l.inner)));
  ParallelFor(num_out, [&](int64_t o0, int64_t o1) {
    for (int64_t o = o0; o < o1; ++o) {
      double s = 0;
      for (int64_t b = 0; b < blocks; ++b) s += partial[b * num_out + o];
      out[o] = static_cast<T>(s * scale);
    }
  });
}

}  // namespace

template <typename T>
void ReduceSumTo(const T* x, const Shape& x_shape, const Shape& kept, T* out, double scale) {
  CHECK_EQ(x_shape.ndim(), kept.ndim());
  const ReduceLayout l = LayoutOf(x_shape, kept);
  const int64_t num_out = kept.NumElements();
  const int64_t num_x = x_shape.NumElements();
  if (num_out == 0) return;
  if (num_x == 0) {
    std::fill(out, out + num_out, T(0) * static_cast<T>(scale));
    return;
  }
  static const Loops<T> loops = LoopsFor<T>();
  if (l.inner_reduced) {
    SumInnerReduced(x, l, num_x, num_out, out, scale, loops);
  } else {
    SumInnerKept(x, l, num_out, out, scale, loops);
  }
}

template void ReduceSumTo<float>(const float*, const Shape&, const Shape&, float*, double);
template void ReduceSumTo<double>(const double*, const Shape&, const Shape&, double*, double);

}  // namespace ofl::math
