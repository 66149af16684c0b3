// CPU kernels of add_n, ones_like and zeros_like (fill.cpp registers the
// ops). add_n walks the output once, in blocks of kBlock elements: a block
// is set to x0 + x1, then each further input is added to it while it sits
// in L1, rather than one pass over the whole output per input. Every element
// is still summed in argument order, one rounding per addition, so every
// level of ops/cpu_isa.h (the loops are compiled for each) gives bitwise the
// same values, equal to the CUDA kernel's (fill_cuda.cu).
#include <algorithm>
#include <vector>

#include "ops/cpu_isa.h"
#include "ops/kernel.h"
#include "ops/parallel.h"

namespace ofl {

namespace {

constexpr int64_t kBlock = 2048;  // elements: 16 KiB of float64

// y[0, n) = xs[0] + xs[1] + ... + xs[count - 1], offset by `at`, block by block.
template <typename T>
inline __attribute__((always_inline)) void AddNLoop(const T* const* xs, int count, int64_t at,
                                                    T* __restrict y, int64_t n) {
  for (int64_t b = 0; b < n; b += kBlock) {
    const int64_t len = std::min(kBlock, n - b);
    T* __restrict out = y + b;
    const T* __restrict x0 = xs[0] + at + b;
    if (count == 1) {
      for (int64_t i = 0; i < len; ++i) out[i] = x0[i];
      continue;
    }
    const T* __restrict x1 = xs[1] + at + b;
    for (int64_t i = 0; i < len; ++i) out[i] = x0[i] + x1[i];
    for (int j = 2; j < count; ++j) {
      const T* __restrict xj = xs[j] + at + b;
      for (int64_t i = 0; i < len; ++i) out[i] += xj[i];
    }
  }
}

template <typename T>
using AddNFn = void (*)(const T* const*, int, int64_t, T*, int64_t);
template <typename T>
OFL_TARGET_AVX512 void AddN512(const T* const* xs, int count, int64_t at, T* y, int64_t n) {
  AddNLoop(xs, count, at, y, n);
}
template <typename T>
OFL_TARGET_AVX2 void AddN256(const T* const* xs, int count, int64_t at, T* y, int64_t n) {
  AddNLoop(xs, count, at, y, n);
}
template <typename T>
void AddNBase(const T* const* xs, int count, int64_t at, T* y, int64_t n) {
  AddNLoop(xs, count, at, y, n);
}

void AddNKernel(KernelContext& k) {
  Tensor& out = k.out(0);
  OFL_DISPATCH_FLOAT(out.dtype(), T, {
    T* y = out.data<T>();
    std::vector<const T*> xs;
    for (Tensor* t : k.inputs) xs.push_back(t->data<T>());
    const AddNFn<T> run = PickByCpuIsa<AddNFn<T>>(AddN512<T>, AddN256<T>, AddNBase<T>);
    const int count = static_cast<int>(xs.size());
    ParallelFor(out.numel(), [&](int64_t b, int64_t e) { run(xs.data(), count, b, y + b, e - b); });
  });
}

}  // namespace

OFL_REGISTER_KERNEL("add_n", DeviceType::kCPU, AddNKernel);
OFL_REGISTER_KERNEL("ones_like", DeviceType::kCPU, [](KernelContext& k) { k.out(0).Fill(1.0); });
OFL_REGISTER_KERNEL("zeros_like", DeviceType::kCPU, [](KernelContext& k) { k.out(0).Fill(0.0); });

}  // namespace ofl
