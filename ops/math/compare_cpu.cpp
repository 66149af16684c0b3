// CPU kernels of the comparisons (compare.cpp): one pass over the output,
// each input read through its broadcast strides (broadcast_loops.h), split
// over ParallelFor.
#include <functional>

#include "ops/kernel.h"
#include "ops/math/broadcast_loops.h"
#include "ops/parallel.h"

namespace ofl {

namespace {

template <typename T, typename Op>
void Compare(const Tensor& ta, const Tensor& tb, Tensor& tout, Op op) {
  const T* a = ta.data<T>();
  const T* b = tb.data<T>();
  bool* y = tout.data<bool>();
  const math::BroadcastLayout layout =
      math::MakeBroadcastLayout(tout.shape(), {ta.shape(), tb.shape()});
  const int64_t sa = layout.strides[0].back();
  const int64_t sb = layout.strides[1].back();
  ParallelFor(tout.numel(), [&](int64_t begin, int64_t end) {
    math::ForEachRun(layout, begin, end, [&](int64_t o, const auto& offsets, int64_t len) {
      const T* pa = a + offsets[0];
      const T* pb = b + offsets[1];
      for (int64_t i = 0; i < len; ++i) y[o + i] = op(pa[i * sa], pb[i * sb]);
    });
  });
}

template <typename Op>
KernelFn CompareKernel(Op op) {
  return [op](KernelContext& kc) {
    OFL_DISPATCH_VALUE(kc.in(0).dtype(), T, Compare<T>(kc.in(0), kc.in(1), kc.out(0), op));
  };
}

OFL_REGISTER_KERNEL("equal", DeviceType::kCPU, CompareKernel(std::equal_to<>()));
OFL_REGISTER_KERNEL("not_equal", DeviceType::kCPU, CompareKernel(std::not_equal_to<>()));
OFL_REGISTER_KERNEL("less", DeviceType::kCPU, CompareKernel(std::less<>()));
OFL_REGISTER_KERNEL("less_equal", DeviceType::kCPU, CompareKernel(std::less_equal<>()));
OFL_REGISTER_KERNEL("greater", DeviceType::kCPU, CompareKernel(std::greater<>()));
OFL_REGISTER_KERNEL("greater_equal", DeviceType::kCPU, CompareKernel(std::greater_equal<>()));

}  // namespace
}  // namespace ofl
