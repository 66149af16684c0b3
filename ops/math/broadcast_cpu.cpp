// CPU kernels of broadcast_to and sum_to (broadcast.cpp). Both work from
// the local tensors' shapes (a split output is a slice of `shape`), with the
// `axes` attribute saying where the small tensor lacks axes.
#include <algorithm>

#include "ops/kernel.h"
#include "ops/math/axes.h"
#include "ops/math/broadcast_loops.h"
#include "ops/parallel.h"

namespace ofl {

namespace {

template <typename T>
void BroadcastTo(const Tensor& x, Tensor& out, const std::vector<int64_t>& axes) {
  const Shape expanded = math::ExpandRank(x.shape(), out.shape().ndim(), axes);
  const math::BroadcastLayout layout = math::MakeBroadcastLayout(out.shape(), {expanded});
  const T* src = x.data<T>();
  T* dst = out.data<T>();
  const int64_t stride = layout.strides[0].back();
  ParallelFor(out.numel(), [&](int64_t begin, int64_t end) {
    math::ForEachRun(layout, begin, end, [&](int64_t o, const auto& offsets, int64_t len) {
      const T* s = src + offsets[0];
      if (stride == 0) {
        std::fill(dst + o, dst + o + len, s[0]);
      } else {
        std::copy(s, s + len, dst + o);
      }
    });
  });
}

void BroadcastToKernel(KernelContext& kc) {
  Tensor& out = kc.out(0);
  const auto axes = math::NormalizedAxesUnchecked(kc.attr().Get<std::vector<int64_t>>("axes"),
                                                  out.shape().ndim());
  OFL_DISPATCH_FLOAT(out.dtype(), T, BroadcastTo<T>(kc.in(0), out, axes));
}

void SumToKernel(KernelContext& kc) {
  const Tensor& x = kc.in(0);
  Tensor& out = kc.out(0);
  const auto axes =
      math::NormalizedAxesUnchecked(kc.attr().Get<std::vector<int64_t>>("axes"), x.shape().ndim());
  const Shape kept = math::ExpandRank(out.shape(), x.shape().ndim(), axes);
  OFL_DISPATCH_FLOAT(out.dtype(), T,
                     math::ReduceSumTo<T>(x.data<T>(), x.shape(), kept, out.data<T>(), 1.0));
}

OFL_REGISTER_KERNEL("broadcast_to", DeviceType::kCPU, BroadcastToKernel);
OFL_REGISTER_KERNEL("sum_to", DeviceType::kCPU, SumToKernel);

}  // namespace
}  // namespace ofl
