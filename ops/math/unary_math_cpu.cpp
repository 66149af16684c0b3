// CPU kernels of exp, log, abs and sign (unary_math.cpp): one flat loop,
// split over ParallelFor.
#include <cmath>

#include "ops/kernel.h"
#include "ops/parallel.h"

namespace ofl {

namespace {

struct ExpOp {
  template <typename T>
  T operator()(T x) const {
    return std::exp(x);
  }
};
struct LogOp {
  template <typename T>
  T operator()(T x) const {
    return std::log(x);
  }
};
struct AbsOp {
  template <typename T>
  T operator()(T x) const {
    return x < T(0) ? -x : x;
  }
};
struct SignOp {
  template <typename T>
  T operator()(T x) const {
    return T((T(0) < x) - (x < T(0)));
  }
};

template <typename T, typename Op>
void Unary(const Tensor& tx, Tensor& ty, Op op) {
  const T* x = tx.data<T>();
  T* y = ty.data<T>();
  ParallelFor(ty.numel(), [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) y[i] = op(x[i]);
  });
}

template <typename Op>
KernelFn FloatKernel(Op op) {
  return [op](KernelContext& kc) {
    OFL_DISPATCH_FLOAT(kc.in(0).dtype(), T, Unary<T>(kc.in(0), kc.out(0), op));
  };
}

// float32/float64 or int32/int64.
template <typename Op>
KernelFn NumberKernel(Op op) {
  return [op](KernelContext& kc) {
    const DataType dtype = kc.in(0).dtype();
    if (dtype == DataType::kInt32 || dtype == DataType::kInt64) {
      OFL_DISPATCH_INDEX(dtype, T, Unary<T>(kc.in(0), kc.out(0), op));
    } else {
      OFL_DISPATCH_FLOAT(dtype, T, Unary<T>(kc.in(0), kc.out(0), op));
    }
  };
}

OFL_REGISTER_KERNEL("exp", DeviceType::kCPU, FloatKernel(ExpOp()));
OFL_REGISTER_KERNEL("log", DeviceType::kCPU, FloatKernel(LogOp()));
OFL_REGISTER_KERNEL("abs", DeviceType::kCPU, NumberKernel(AbsOp()));
OFL_REGISTER_KERNEL("sign", DeviceType::kCPU, NumberKernel(SignOp()));

}  // namespace
}  // namespace ofl
