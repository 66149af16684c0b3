// CPU kernel of bias_add (bias_add.cpp): x seen as (outer, C, inner) around
// the bias axis; each of the outer * C rows of `inner` contiguous elements
// gets one bias value; when the axis is the last (inner = 1, a linear
// layer's bias), each of the outer rows adds the bias vector instead. Rows
// are split over ParallelFor.
#include <algorithm>

#include "ops/kernel.h"
#include "ops/parallel.h"

namespace ofl {

namespace {

template <typename T>
void BiasAdd(const Tensor& x, const Tensor& bias, Tensor& out, int64_t axis) {
  const Shape& s = x.shape();
  const int64_t channels = s[axis];
  const int64_t inner = s.Count(axis + 1, s.ndim());
  const int64_t outer = s.Count(0, axis);
  CHECK_EQ(bias.numel(), channels);
  const T* src = x.data<T>();
  const T* b = bias.data<T>();
  T* dst = out.data<T>();
  if (inner == 1) {  // the bias axis is the last: each outer row adds the bias vector
    ParallelFor(
        outer,
        [&](int64_t r0, int64_t r1) {
          for (int64_t r = r0; r < r1; ++r) {
            const T* in_row = src + r * channels;
            T* out_row = dst + r * channels;
            for (int64_t c = 0; c < channels; ++c) out_row[c] = in_row[c] + b[c];
          }
        },
        std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(1, channels)));
    return;
  }
  ParallelFor(
      outer * channels,
      [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
          const T v = b[r % channels];
          const T* in_row = src + r * inner;
          T* out_row = dst + r * inner;
          for (int64_t i = 0; i < inner; ++i) out_row[i] = in_row[i] + v;
        }
      },
      std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(1, inner)));
}

void BiasAddKernel(KernelContext& kc) {
  const Tensor& x = kc.in(0);
  int64_t axis = kc.attr().Get<int64_t>("axis");
  if (axis < 0) axis += x.shape().ndim();
  OFL_DISPATCH_FLOAT(x.dtype(), T, BiasAdd<T>(x, kc.in(1), kc.out(0), axis));
}

OFL_REGISTER_KERNEL("bias_add", DeviceType::kCPU, BiasAddKernel);

}  // namespace
}  // namespace ofl
