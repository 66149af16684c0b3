// CPU kernels of add, sub, mul, div. Equal shapes run one flat loop; other
// shapes walk the output with each input's broadcast strides
// (broadcast_loops.h). Both split the output over ParallelFor. The loops
// are compiled for every level of ops/cpu_isa.h and run the active one's
// (one rounding per element: every level gives bitwise the same values).
#include "ops/cpu_isa.h"
#include "ops/kernel.h"
#include "ops/math/broadcast_loops.h"
#include "ops/parallel.h"

namespace ofl {

namespace {

struct AddOp {
  template <typename T>
  T operator()(T a, T b) const {
    return a + b;
  }
};
struct SubOp {
  template <typename T>
  T operator()(T a, T b) const {
    return a - b;
  }
};
struct MulOp {
  template <typename T>
  T operator()(T a, T b) const {
    return a * b;
  }
};
struct DivOp {
  template <typename T>
  T operator()(T a, T b) const {
    return a / b;
  }
};

// y[i] = op(a[i * sa], b[i * sb]) for i < len; strides 0 or 1 get their own
// loops so that the compiler vectorises them.
template <typename T, typename Op>
inline __attribute__((always_inline)) void Run(Op op, const T* a, int64_t sa, const T* b,
                                               int64_t sb, T* y, int64_t len) {
  if (sa == 1 && sb == 1) {
    for (int64_t i = 0; i < len; ++i) y[i] = op(a[i], b[i]);
  } else if (sa == 0 && sb == 1) {
    const T av = a[0];
    for (int64_t i = 0; i < len; ++i) y[i] = op(av, b[i]);
  } else if (sa == 1 && sb == 0) {
    const T bv = b[0];
    for (int64_t i = 0; i < len; ++i) y[i] = op(a[i], bv);
  } else {
    for (int64_t i = 0; i < len; ++i) y[i] = op(a[i * sa], b[i * sb]);
  }
}

template <typename T, typename Op>
using RunFn = void (*)(Op, const T*, int64_t, const T*, int64_t, T*, int64_t);
template <typename T, typename Op>
OFL_TARGET_AVX512 void Run512(Op op, const T* a, int64_t sa, const T* b, int64_t sb, T* y,
                              int64_t len) {
  Run(op, a, sa, b, sb, y, len);
}
template <typename T, typename Op>
OFL_TARGET_AVX2 void Run256(Op op, const T* a, int64_t sa, const T* b, int64_t sb, T* y,
                            int64_t len) {
  Run(op, a, sa, b, sb, y, len);
}
template <typename T, typename Op>
void RunBase(Op op, const T* a, int64_t sa, const T* b, int64_t sb, T* y, int64_t len) {
  Run(op, a, sa, b, sb, y, len);
}

template <typename T, typename Op>
void Binary(const Tensor& ta, const Tensor& tb, Tensor& tout, Op op) {
  const T* a = ta.data<T>();
  const T* b = tb.data<T>();
  T* y = tout.data<T>();
  const int64_t n = tout.numel();
  const RunFn<T, Op> run = PickByCpuIsa<RunFn<T, Op>>(Run512<T, Op>, Run256<T, Op>, RunBase<T, Op>);
  if (ta.shape() == tout.shape() && tb.shape() == tout.shape()) {
    ParallelFor(n, [&](int64_t begin, int64_t end) {
      run(op, a + begin, 1, b + begin, 1, y + begin, end - begin);
    });
    return;
  }
  const math::BroadcastLayout layout =
      math::MakeBroadcastLayout(tout.shape(), {ta.shape(), tb.shape()});
  const int64_t sa = layout.strides[0].back();
  const int64_t sb = layout.strides[1].back();
  ParallelFor(n, [&](int64_t begin, int64_t end) {
    math::ForEachRun(layout, begin, end, [&](int64_t o, const auto& offsets, int64_t len) {
      run(op, a + offsets[0], sa, b + offsets[1], sb, y + o, len);
    });
  });
}

template <typename Op>
KernelFn BinaryKernel(Op op) {
  return [op](KernelContext& kc) {
    Tensor& out = kc.out(0);
    OFL_DISPATCH_FLOAT(out.dtype(), T, Binary<T>(kc.in(0), kc.in(1), out, op));
  };
}

OFL_REGISTER_KERNEL("add", DeviceType::kCPU, BinaryKernel(AddOp()));
OFL_REGISTER_KERNEL("sub", DeviceType::kCPU, BinaryKernel(SubOp()));
OFL_REGISTER_KERNEL("mul", DeviceType::kCPU, BinaryKernel(MulOp()));
OFL_REGISTER_KERNEL("div", DeviceType::kCPU, BinaryKernel(DivOp()));

}  // namespace
}  // namespace ofl
