// CPU kernel of bias_add (bias_add.cpp): x seen as (outer, C, inner) around
// the bias axis; each of the outer * C rows of `inner` contiguous elements
// gets one bias value; when the axis is the last (inner = 1, a linear
// layer's bias), each of the outer rows adds the bias vector instead. Rows
// are split over ParallelFor. The row loops are compiled for every level of
// ops/cpu_isa.h and run the active one's (bitwise the same values at all).
#include <algorithm>

#include "ops/cpu_isa.h"
#include "ops/kernel.h"
#include "ops/parallel.h"

namespace ofl {

namespace {

// Rows [r0, r1) of `inner` elements; inner == 1 means rows of `channels`
// elements each adding the bias vector, otherwise row r adds b[r % channels].
template <typename T>
inline __attribute__((always_inline)) void BiasRows(const T* src, const T* b, T* dst,
                                                    int64_t channels, int64_t inner, int64_t r0,
                                                    int64_t r1) {
  if (inner == 1) {
    for (int64_t r = r0; r < r1; ++r) {
      const T* in_row = src + r * channels;
      T* out_row = dst + r * channels;
      for (int64_t c = 0; c < channels; ++c) out_row[c] = in_row[c] + b[c];
    }
    return;
  }
  for (int64_t r = r0; r < r1; ++r) {
    const T v = b[r % channels];
    const T* in_row = src + r * inner;
    T* out_row = dst + r * inner;
    for (int64_t i = 0; i < inner; ++i) out_row[i] = in_row[i] + v;
  }
}

template <typename T>
using BiasRowsFn = void (*)(const T*, const T*, T*, int64_t, int64_t, int64_t, int64_t);
template <typename T>
OFL_TARGET_AVX512 void BiasRows512(const T* src, const T* b, T* dst, int64_t channels,
                                   int64_t inner, int64_t r0, int64_t r1) {
  BiasRows(src, b, dst, channels, inner, r0, r1);
}
template <typename T>
OFL_TARGET_AVX2 void BiasRows256(const T* src, const T* b, T* dst, int64_t channels, int64_t inner,
                                 int64_t r0, int64_t r1) {
  BiasRows(src, b, dst, channels, inner, r0, r1);
}
template <typename T>
void BiasRowsBase(const T* src, const T* b, T* dst, int64_t channels, int64_t inner, int64_t r0,
                  int64_t r1) {
  BiasRows(src, b, dst, channels, inner, r0, r1);
}

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
  const BiasRowsFn<T> run =
      PickByCpuIsa<BiasRowsFn<T>>(BiasRows512<T>, BiasRows256<T>, BiasRowsBase<T>);
  // inner == 1 (the bias axis is the last): `outer` rows of `channels`;
  // otherwise outer * channels rows of `inner`.
  const int64_t rows = inner == 1 ? outer : outer * channels;
  const int64_t row_len = inner == 1 ? channels : inner;
  ParallelFor(
      rows, [&](int64_t r0, int64_t r1) { run(src, b, dst, channels, inner, r0, r1); },
      std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(1, row_len)));
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
