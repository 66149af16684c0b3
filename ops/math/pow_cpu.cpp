// CPU kernel of pow (pow.cpp): one pass over the output, each input read
// through its broadcast strides (broadcast_loops.h), split over ParallelFor.
#include <cmath>

#include "ops/kernel.h"
#include "ops/math/broadcast_loops.h"
#include "ops/parallel.h"

namespace ofl {

namespace {

template <typename T>
void Pow(const Tensor& ta, const Tensor& tb, Tensor& tout) {
  const T* a = ta.data<T>();
  const T* b = tb.data<T>();
  T* y = tout.data<T>();
  const math::BroadcastLayout layout =
      math::MakeBroadcastLayout(tout.shape(), {ta.shape(), tb.shape()});
  const int64_t sa = layout.strides[0].back();
  const int64_t sb = layout.strides[1].back();
  ParallelFor(tout.numel(), [&](int64_t begin, int64_t end) {
    math::ForEachRun(layout, begin, end, [&](int64_t o, const auto& offsets, int64_t len) {
      const T* pa = a + offsets[0];
      const T* pb = b + offsets[1];
      for (int64_t i = 0; i < len; ++i) y[o + i] = std::pow(pa[i * sa], pb[i * sb]);
    });
  });
}

OFL_REGISTER_KERNEL("pow", DeviceType::kCPU, [](KernelContext& kc) {
  OFL_DISPATCH_FLOAT(kc.out(0).dtype(), T, Pow<T>(kc.in(0), kc.in(1), kc.out(0)));
});

}  // namespace
}  // namespace ofl
