// CPU kernels of gather and gather_grad (gather.cpp). The indices are checked
// first (index_check.h). gather_grad gives each (outer, inner) column to one
// thread, which adds its dy in index order: no races, and the same sums
// whatever the thread count.
#include <cstring>

#include "ops/array/gather_plan.h"
#include "ops/index_check.h"
#include "ops/kernel.h"
#include "ops/parallel.h"

namespace ofl {

namespace {

template <typename T, typename I>
void Gather(const Tensor& tx, const Tensor& tindex, Tensor& tout, const GatherPlan& p) {
  const T* x = tx.data<T>();
  const I* index = tindex.data<I>();
  T* y = tout.data<T>();
  const int64_t rows = p.outer * p.index_len;
  ParallelFor(rows, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      const int64_t o = row / p.index_len;
      for (int64_t i = 0; i < p.inner; ++i) {
        const int64_t at = row * p.inner + i;
        y[at] = x[(o * p.values_len + static_cast<int64_t>(index[at])) * p.inner + i];
      }
    }
  });
}

template <typename T, typename I>
void GatherGrad(const Tensor& tindex, const Tensor& tdy, Tensor& tdx, const GatherPlan& p) {
  const I* index = tindex.data<I>();
  const T* dy = tdy.data<T>();
  T* dx = tdx.data<T>();
  if (tdx.nbytes() > 0) std::memset(dx, 0, tdx.nbytes());
  ParallelFor(p.outer * p.inner, [&](int64_t begin, int64_t end) {
    for (int64_t column = begin; column < end; ++column) {
      const int64_t o = column / p.inner;
      const int64_t i = column % p.inner;
      for (int64_t k = 0; k < p.index_len; ++k) {
        const int64_t at = (o * p.index_len + k) * p.inner + i;
        dx[(o * p.values_len + static_cast<int64_t>(index[at])) * p.inner + i] += dy[at];
      }
    }
  });
}

int64_t AxisOf(const KernelContext& kc, int64_t rank) {
  const int64_t axis = kc.attr().Get<int64_t>("axis");
  return axis < 0 ? axis + rank : axis;
}

void GatherKernel(KernelContext& kc) {
  const Tensor& x = kc.in(0);
  const Tensor& index = kc.in(1);
  const int64_t axis = AxisOf(kc, x.shape().ndim());
  const GatherPlan p = MakeGatherPlan(x.shape(), index.shape(), axis);
  const std::string limit = "x.shape[" + std::to_string(axis) + "]";
  OFL_DISPATCH_INDEX(index.dtype(), I, {
    if (!CheckIndexRange<I>(kc, "index", index, p.values_len, limit, {})) return;
    OFL_DISPATCH_VALUE(x.dtype(), T, Gather<T, I>(x, index, kc.out(0), p));
  });
}

void GatherGradKernel(KernelContext& kc) {
  const Tensor& index = kc.in(0);
  Tensor& dx = kc.out(0);
  const int64_t axis = AxisOf(kc, dx.shape().ndim());
  const GatherPlan p = MakeGatherPlan(dx.shape(), index.shape(), axis);
  const std::string limit = "shape[" + std::to_string(axis) + "]";
  OFL_DISPATCH_INDEX(index.dtype(), I, {
    if (!CheckIndexRange<I>(kc, "index", index, p.values_len, limit, {})) return;
    OFL_DISPATCH_FLOAT(dx.dtype(), T, GatherGrad<T, I>(index, kc.in(1), dx, p));
  });
}

OFL_REGISTER_KERNEL("gather", DeviceType::kCPU, GatherKernel);
OFL_REGISTER_KERNEL("gather_grad", DeviceType::kCPU, GatherGradKernel);

}  // namespace
}  // namespace ofl
