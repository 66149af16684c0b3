// CPU kernels of the pointwise activations and their backward ops
// (activation.cpp registers the ops). float32 and float64; each runs
// ParallelFor over the flat elements.
#include <cmath>

#include "ops/kernel.h"
#include "ops/parallel.h"
#include "ops/vector_math.h"

namespace ofl {

namespace {

// y[i] = f(x[i]); f is a generic lambda called with the element type.
template <typename F>
void MapUnary(KernelContext& k, F f) {
  OFL_DISPATCH_FLOAT(k.in(0).dtype(), T, {
    const T* x = k.in(0).data<T>();
    T* y = k.out(0).data<T>();
    ParallelFor(k.out(0).numel(), [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) y[i] = f(x[i]);
    });
  });
}

// dx[i] = f(value[i], dy[i]).
template <typename F>
void MapBinary(KernelContext& k, F f) {
  OFL_DISPATCH_FLOAT(k.in(0).dtype(), T, {
    const T* v = k.in(0).data<T>();
    const T* dy = k.in(1).data<T>();
    T* dx = k.out(0).data<T>();
    ParallelFor(k.out(0).numel(), [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) dx[i] = f(v[i], dy[i]);
    });
  });
}

constexpr double kInvSqrt2 = 0.70710678118654752440;
constexpr double kInvSqrt2Pi = 0.39894228040143267794;

void ReluKernel(KernelContext& k) {
  // NaN stays NaN (np.maximum(x, 0)): the test is x <= 0, false for NaN.
  MapUnary(k, [](auto x) { return x <= decltype(x)(0) ? decltype(x)(0) : x; });
}
void ReluGradKernel(KernelContext& k) {
  // As PyTorch's threshold_backward: dy where y is NaN (where(y <= 0, 0, dy)).
  MapBinary(k, [](auto y, auto dy) { return y <= decltype(y)(0) ? decltype(y)(0) : dy; });
}

// Phi(x) = (1 + erf(x / sqrt2)) / 2, written with erfc so that it keeps its
// relative precision for negative x, where 1 + erf(.) would cancel. float32
// runs ops/vector_math.h's loops (the same formula on the active level's
// vector lanes).
void GeluKernel(KernelContext& k) {
  if (k.in(0).dtype() == DataType::kFloat32) {
    const float* x = k.in(0).data<float>();
    float* y = k.out(0).data<float>();
    ParallelFor(k.out(0).numel(),
                [&](int64_t b, int64_t e) { vec::GeluForward(x + b, y + b, e - b); });
    return;
  }
  MapUnary(k, [](auto x) {
    using T = decltype(x);
    return T(0.5) * x * std::erfc(-x * T(kInvSqrt2));
  });
}
void GeluGradKernel(KernelContext& k) {
  if (k.in(0).dtype() == DataType::kFloat32) {
    const float* x = k.in(0).data<float>();
    const float* dy = k.in(1).data<float>();
    float* dx = k.out(0).data<float>();
    ParallelFor(k.out(0).numel(),
                [&](int64_t b, int64_t e) { vec::GeluBackward(x + b, dy + b, dx + b, e - b); });
    return;
  }
  MapBinary(k, [](auto x, auto dy) {
    using T = decltype(x);
    T cdf = T(0.5) * std::erfc(-x * T(kInvSqrt2));
    T pdf = std::exp(T(-0.5) * x * x) * T(kInvSqrt2Pi);
    return dy * (cdf + x * pdf);
  });
}

void TanhKernel(KernelContext& k) {
  MapUnary(k, [](auto x) { return std::tanh(x); });
}
void TanhGradKernel(KernelContext& k) {
  MapBinary(k, [](auto y, auto dy) { return dy * (decltype(y)(1) - y * y); });
}

// Stable for large |x|: exp is only taken of a non-positive number.
void SigmoidKernel(KernelContext& k) {
  MapUnary(k, [](auto x) {
    using T = decltype(x);
    if (x >= T(0)) return T(1) / (T(1) + std::exp(-x));
    T e = std::exp(x);
    return e / (T(1) + e);
  });
}
void SigmoidGradKernel(KernelContext& k) {
  MapBinary(k, [](auto y, auto dy) { return dy * y * (decltype(y)(1) - y); });
}

}  // namespace

OFL_REGISTER_KERNEL("relu", DeviceType::kCPU, ReluKernel);
OFL_REGISTER_KERNEL("relu_grad", DeviceType::kCPU, ReluGradKernel);
OFL_REGISTER_KERNEL("gelu", DeviceType::kCPU, GeluKernel);
OFL_REGISTER_KERNEL("gelu_grad", DeviceType::kCPU, GeluGradKernel);
OFL_REGISTER_KERNEL("tanh", DeviceType::kCPU, TanhKernel);
OFL_REGISTER_KERNEL("tanh_grad", DeviceType::kCPU, TanhGradKernel);
OFL_REGISTER_KERNEL("sigmoid", DeviceType::kCPU, SigmoidKernel);
OFL_REGISTER_KERNEL("sigmoid_grad", DeviceType::kCPU, SigmoidGradKernel);

}  // namespace ofl
