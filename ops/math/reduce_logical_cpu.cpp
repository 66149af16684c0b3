// CPU kernels of reduce_any, reduce_all, argmax and argmin
// (reduce_logical.cpp): each output element walks its reduced elements
// (reduce_walk.h); the outputs are split over ParallelFor.
#include <cmath>

#include "ops/kernel.h"
#include "ops/math/axes.h"
#include "ops/math/reduce_walk.h"
#include "ops/parallel.h"

namespace ofl {

namespace {

// The walk of kernel call kc: its axes attribute ("axis" or "axes").
math::ReduceWalk WalkOf(const KernelContext& kc) {
  const Shape& x = kc.in(0).shape();
  std::vector<int64_t> axes;
  if (kc.attr().Has("axis")) {
    int64_t a = kc.attr().Get<int64_t>("axis");
    axes.push_back(a < 0 ? a + x.ndim() : a);
  } else {
    axes =
        math::NormalizeAxes(kc.attr().Get<std::vector<int64_t>>("axes"), x.ndim(), "", "").value();
    if (axes.empty()) {
      for (int64_t a = 0; a < x.ndim(); ++a) axes.push_back(a);
    }
  }
  return math::MakeReduceWalk(x, axes);
}

// any: stops at the first nonzero; all: at the first zero.
template <typename T, bool kAny>
void Logical(const Tensor& tx, Tensor& tout, const math::ReduceWalk& w) {
  const T* x = tx.data<T>();
  bool* y = tout.data<bool>();
  ParallelFor(w.num_kept, [&](int64_t begin, int64_t end) {
    for (int64_t o = begin; o < end; ++o) {
      const T* base = x + math::OffsetOf(o, w.kept_dims, w.kept_strides);
      bool result = !kAny;
      for (int64_t r = 0; r < w.num_reduced; ++r) {
        const bool nonzero = base[math::OffsetOf(r, w.reduced_dims, w.reduced_strides)] != T(0);
        if (nonzero == kAny) {
          result = kAny;
          break;
        }
      }
      y[o] = result;
    }
  });
}

template <typename T>
bool IsNan(T v) {
  if constexpr (std::is_floating_point_v<T>) return std::isnan(v);
  return false;
}

// The first largest (kMax) or smallest element; the first NaN wins outright.
template <typename T, bool kMax>
void Arg(const Tensor& tx, Tensor& tout, const math::ReduceWalk& w) {
  const T* x = tx.data<T>();
  int64_t* y = tout.data<int64_t>();
  const int64_t stride = w.reduced_strides[0];
  ParallelFor(w.num_kept, [&](int64_t begin, int64_t end) {
    for (int64_t o = begin; o < end; ++o) {
      const T* p = x + math::OffsetOf(o, w.kept_dims, w.kept_strides);
      int64_t best = 0;
      T best_value = p[0];
      for (int64_t r = 1; r < w.num_reduced && !IsNan(best_value); ++r) {
        const T v = p[r * stride];
        if (IsNan(v) || (kMax ? v > best_value : v < best_value)) {
          best = r;
          best_value = v;
        }
      }
      y[o] = best;
    }
  });
}

template <bool kAny>
void LogicalKernel(KernelContext& kc) {
  const math::ReduceWalk w = WalkOf(kc);
  OFL_DISPATCH_VALUE(kc.in(0).dtype(), T, Logical<T, kAny>(kc.in(0), kc.out(0), w));
}

template <bool kMax>
void ArgKernel(KernelContext& kc) {
  const math::ReduceWalk w = WalkOf(kc);
  OFL_DISPATCH_VALUE(kc.in(0).dtype(), T, Arg<T, kMax>(kc.in(0), kc.out(0), w));
}

OFL_REGISTER_KERNEL("reduce_any", DeviceType::kCPU, LogicalKernel<true>);
OFL_REGISTER_KERNEL("reduce_all", DeviceType::kCPU, LogicalKernel<false>);
OFL_REGISTER_KERNEL("argmax", DeviceType::kCPU, ArgKernel<true>);
OFL_REGISTER_KERNEL("argmin", DeviceType::kCPU, ArgKernel<false>);

}  // namespace
}  // namespace ofl
