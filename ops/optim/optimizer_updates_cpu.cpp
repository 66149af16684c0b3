// CPU kernels of sgd_update and adam_update (ops/optim/optimizer_updates.cpp):
// one pass over the parameter, parallel in chunks. Each loop is compiled for
// every level of ops/cpu_isa.h (AVX-512, AVX2 + FMA, baseline) and runs the
// active one's: the same operations, which the vector levels may fuse into
// fused multiply-adds (so the levels may differ in the last bit; one level is bitwise
// reproducible). The loops are written for the compiler's vectoriser: plain
// loops over restrict-qualified arrays (the optimizer state never aliases the
// parameter or the gradient), and this file alone is compiled with
// -fno-math-errno (ops/CMakeLists.txt) so that std::sqrt becomes the vector
// square root instead of a libm call that may set errno.
#include <cmath>
#include <cstdint>
#include <initializer_list>

#include "ops/cpu_isa.h"
#include "ops/kernel.h"
#include "ops/parallel.h"

namespace ofl {

namespace {

// The fed "lr" input (index `i`) when the caller gave one, else the attribute.
double LearningRate(KernelContext& k, int i) {
  if (static_cast<int>(k.inputs.size()) <= i) return k.attr().Get<double>("lr");
  const Tensor& lr = k.in(i);
  if (lr.dtype() == DataType::kFloat64) return lr.data<double>()[0];
  return lr.data<float>()[0];
}

// Whether inputs `names` (index, name) share no byte; the loops take them as
// restrict arrays, so a call that passes one array twice (an eager caller can)
// fails the kernel before anything is written.
bool DistinctArrays(KernelContext& k, std::initializer_list<std::pair<int, const char*>> names) {
  for (auto a = names.begin(); a != names.end(); ++a) {
    for (auto b = a + 1; b != names.end(); ++b) {
      const auto lo = [&](int i) { return reinterpret_cast<uintptr_t>(k.in(i).raw()); };
      const auto hi = [&](int i) { return lo(i) + static_cast<uintptr_t>(k.in(i).nbytes()); };
      if (k.in(a->first).nbytes() > 0 && k.in(b->first).nbytes() > 0 &&
          lo(a->first) < hi(b->first) && lo(b->first) < hi(a->first)) {
        k.Fail(a->second, " and ", b->second, " share memory: the update needs distinct arrays");
        return false;
      }
    }
  }
  return true;
}

// Elements [0, n) of one SGD step.
template <typename T>
inline __attribute__((always_inline)) void SgdLoop(T* __restrict p, const T* __restrict g,
                                                   T* __restrict buf, int64_t n, T lr, T momentum,
                                                   T wd) {
  if (momentum != 0) {
    for (int64_t i = 0; i < n; ++i) {
      buf[i] = momentum * buf[i] + (g[i] + wd * p[i]);
      p[i] -= lr * buf[i];
    }
  } else {
    for (int64_t i = 0; i < n; ++i) p[i] -= lr * (g[i] + wd * p[i]);
  }
}

template <typename T>
using SgdFn = void (*)(T*, const T*, T*, int64_t, T, T, T);
template <typename T>
OFL_TARGET_AVX512 void Sgd512(T* p, const T* g, T* buf, int64_t n, T lr, T momentum, T wd) {
  SgdLoop(p, g, buf, n, lr, momentum, wd);
}
template <typename T>
OFL_TARGET_AVX2 void Sgd256(T* p, const T* g, T* buf, int64_t n, T lr, T momentum, T wd) {
  SgdLoop(p, g, buf, n, lr, momentum, wd);
}
template <typename T>
void SgdScalar(T* p, const T* g, T* buf, int64_t n, T lr, T momentum, T wd) {
  SgdLoop(p, g, buf, n, lr, momentum, wd);
}

void SgdKernel(KernelContext& k) {
  if (!DistinctArrays(k, {{0, "param"}, {1, "grad"}, {2, "momentum_buffer"}})) return;
  const double lr = LearningRate(k, 3);
  const double momentum = k.attr().Get<double>("momentum");
  const double wd = k.attr().Get<double>("weight_decay");
  Tensor& param = k.mutable_in(0);
  OFL_DISPATCH_FLOAT(param.dtype(), T, {
    T* p = param.data<T>();
    const T* g = k.in(1).data<T>();
    T* buf = k.mutable_in(2).data<T>();
    const SgdFn<T> run = PickByCpuIsa<SgdFn<T>>(Sgd512<T>, Sgd256<T>, SgdScalar<T>);
    ParallelFor(param.numel(), [&](int64_t b, int64_t e) {
      run(p + b, g + b, buf + b, e - b, static_cast<T>(lr), static_cast<T>(momentum),
          static_cast<T>(wd));
    });
  });
}

// The scalars of one Adam step, in the parameter's type.
template <typename T>
struct AdamScalars {
  T b1, b2, one_minus_b1, one_minus_b2, c1, c2, lr, eps, decay, coupled;
};

// Elements [0, n) of one Adam step.
template <typename T>
inline __attribute__((always_inline)) void AdamLoop(T* __restrict p, const T* __restrict g,
                                                    T* __restrict m, T* __restrict v, int64_t n,
                                                    const AdamScalars<T>& scalars) {
  const AdamScalars<T> s = scalars;  // locals: no reload per element
  for (int64_t i = 0; i < n; ++i) {
    const T grad = g[i] + s.coupled * p[i];
    const T mi = s.b1 * m[i] + s.one_minus_b1 * grad;
    const T vi = s.b2 * v[i] + s.one_minus_b2 * grad * grad;
    m[i] = mi;
    v[i] = vi;
    p[i] = p[i] * s.decay - s.lr * (mi / s.c1) / (std::sqrt(vi / s.c2) + s.eps);
  }
}

template <typename T>
using AdamFn = void (*)(T*, const T*, T*, T*, int64_t, const AdamScalars<T>&);
template <typename T>
OFL_TARGET_AVX512 void Adam512(T* p, const T* g, T* m, T* v, int64_t n, const AdamScalars<T>& s) {
  AdamLoop(p, g, m, v, n, s);
}
template <typename T>
OFL_TARGET_AVX2 void Adam256(T* p, const T* g, T* m, T* v, int64_t n, const AdamScalars<T>& s) {
  AdamLoop(p, g, m, v, n, s);
}
template <typename T>
void AdamScalar(T* p, const T* g, T* m, T* v, int64_t n, const AdamScalars<T>& s) {
  AdamLoop(p, g, m, v, n, s);
}

void AdamKernel(KernelContext& k) {
  if (!DistinctArrays(k, {{0, "param"}, {1, "grad"}, {2, "m"}, {3, "v"}})) return;
  const double lr = LearningRate(k, 5);
  const double b1 = k.attr().Get<double>("beta1");
  const double b2 = k.attr().Get<double>("beta2");
  const double eps = k.attr().Get<double>("eps");
  const double wd = k.attr().Get<double>("weight_decay");
  const bool decoupled = k.attr().Get<bool>("decoupled_weight_decay");
  int64_t& step = k.mutable_in(4).data<int64_t>()[0];
  ++step;
  const double correction1 = 1.0 - std::pow(b1, static_cast<double>(step));
  const double correction2 = 1.0 - std::pow(b2, static_cast<double>(step));
  Tensor& param = k.mutable_in(0);
  OFL_DISPATCH_FLOAT(param.dtype(), T, {
    T* p = param.data<T>();
    const T* g = k.in(1).data<T>();
    T* m = k.mutable_in(2).data<T>();
    T* v = k.mutable_in(3).data<T>();
    const AdamScalars<T> s{static_cast<T>(b1),
                           static_cast<T>(b2),
                           static_cast<T>(1 - b1),
                           static_cast<T>(1 - b2),
                           static_cast<T>(correction1),
                           static_cast<T>(correction2),
                           static_cast<T>(lr),
                           static_cast<T>(eps),
                           static_cast<T>(decoupled ? 1.0 - lr * wd : 1.0),
                           static_cast<T>(decoupled ? 0.0 : wd)};
    const AdamFn<T> run = PickByCpuIsa<AdamFn<T>>(Adam512<T>, Adam256<T>, AdamScalar<T>);
    ParallelFor(param.numel(), [&](int64_t bgn, int64_t end) {
      run(p + bgn, g + bgn, m + bgn, v + bgn, end - bgn, s);
    });
  });
}

}  // namespace

OFL_REGISTER_KERNEL("sgd_update", DeviceType::kCPU, SgdKernel);
OFL_REGISTER_KERNEL("adam_update", DeviceType::kCPU, AdamKernel);

}  // namespace ofl
