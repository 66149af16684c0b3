// CPU kernel of where (where.cpp): one pass over the output, each input read
// through its broadcast strides (broadcast_loops.h), split over ParallelFor.
#include "ops/kernel.h"
#include "ops/math/broadcast_loops.h"
#include "ops/parallel.h"

namespace ofl {

namespace {

template <typename T>
void Where(const Tensor& tc, const Tensor& ta, const Tensor& tb, Tensor& tout) {
  const bool* c = tc.data<bool>();
  const T* a = ta.data<T>();
  const T* b = tb.data<T>();
  T* y = tout.data<T>();
  const math::BroadcastLayout layout =
      math::MakeBroadcastLayout(tout.shape(), {tc.shape(), ta.shape(), tb.shape()});
  const int64_t sc = layout.strides[0].back();
  const int64_t sa = layout.strides[1].back();
  const int64_t sb = layout.strides[2].back();
  ParallelFor(tout.numel(), [&](int64_t begin, int64_t end) {
    math::ForEachRun(layout, begin, end, [&](int64_t o, const auto& offsets, int64_t len) {
      const bool* pc = c + offsets[0];
      const T* pa = a + offsets[1];
      const T* pb = b + offsets[2];
      for (int64_t i = 0; i < len; ++i) y[o + i] = pc[i * sc] ? pa[i * sa] : pb[i * sb];
    });
  });
}

OFL_REGISTER_KERNEL("where", DeviceType::kCPU, [](KernelContext& kc) {
  OFL_DISPATCH_VALUE(kc.out(0).dtype(), T, Where<T>(kc.in(0), kc.in(1), kc.in(2), kc.out(0)));
});

}  // namespace
}  // namespace ofl
