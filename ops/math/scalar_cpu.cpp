// CPU kernels of scalar_add, scalar_mul and scalar_pow (scalar.cpp): flat
// loops over the elements, split over ParallelFor.
#include <cmath>

#include "ops/kernel.h"
#include "ops/parallel.h"

namespace ofl {

namespace {

template <typename T, typename F>
void Map(const Tensor& x, Tensor& out, F f) {
  const T* src = x.data<T>();
  T* dst = out.data<T>();
  ParallelFor(out.numel(), [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) dst[i] = f(src[i]);
  });
}

void ScalarAddKernel(KernelContext& kc) {
  const double value = kc.attr().Get<double>("value");
  OFL_DISPATCH_FLOAT(kc.out(0).dtype(), T, {
    const T v = static_cast<T>(value);
    Map<T>(kc.in(0), kc.out(0), [v](T x) { return x + v; });
  });
}

void ScalarMulKernel(KernelContext& kc) {
  const double value = kc.attr().Get<double>("value");
  OFL_DISPATCH_FLOAT(kc.out(0).dtype(), T, {
    const T v = static_cast<T>(value);
    Map<T>(kc.in(0), kc.out(0), [v](T x) { return x * v; });
  });
}

void ScalarPowKernel(KernelContext& kc) {
  const double exponent = kc.attr().Get<double>("exponent");
  OFL_DISPATCH_FLOAT(kc.out(0).dtype(), T, {
    const T e = static_cast<T>(exponent);
    if (exponent == 2.0) {
      Map<T>(kc.in(0), kc.out(0), [](T x) { return x * x; });
    } else if (exponent == 1.0) {
      Map<T>(kc.in(0), kc.out(0), [](T x) { return x; });
    } else {
      Map<T>(kc.in(0), kc.out(0), [e](T x) { return std::pow(x, e); });
    }
  });
}

OFL_REGISTER_KERNEL("scalar_add", DeviceType::kCPU, ScalarAddKernel);
OFL_REGISTER_KERNEL("scalar_mul", DeviceType::kCPU, ScalarMulKernel);
OFL_REGISTER_KERNEL("scalar_pow", DeviceType::kCPU, ScalarPowKernel);

}  // namespace
}  // namespace ofl
