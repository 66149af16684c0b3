// CUDA kernels of sgd_update and adam_update (optimizer_updates.cpp): one
// grid-stride pass over the parameter, in place, with the arithmetic and
// casts of optimizer_updates_cpu.cpp. The optional lr input and Adam's step
// counter stay on the device: a one-thread kernel increments step and
// writes lr and the bias corrections to stream-ordered scratch, which the
// update kernel reads, so nothing synchronises with the host.
#include <cmath>

#include "ops/cuda_device.cuh"
#include "ops/cuda_util.h"

namespace ofl {

namespace {

// The fed lr (a float32/float64 scalar on the device), or nullptr: the attr.
struct LearningRate {
  const void* tensor = nullptr;
  bool f64 = false;
  double attr = 0;
};

LearningRate LearningRateOf(KernelContext& k, int i) {
  LearningRate lr;
  lr.attr = k.attr().Get<double>("lr");
  if (static_cast<int>(k.inputs.size()) > i) {
    lr.tensor = k.in(i).raw();
    lr.f64 = k.in(i).dtype() == DataType::kFloat64;
  }
  return lr;
}

__device__ double Read(const LearningRate& lr) {
  if (lr.tensor == nullptr) return lr.attr;
  return lr.f64 ? *static_cast<const double*>(lr.tensor)
                : static_cast<double>(*static_cast<const float*>(lr.tensor));
}

template <typename T>
__global__ void Sgd(int64_t n, LearningRate lr_in, double momentum, double wd, T* p, const T* g,
                    T* buf) {
  const T lr = static_cast<T>(Read(lr_in));
  OFL_KERNEL_LOOP(i, n) {
    T d = g[i] + static_cast<T>(wd) * p[i];
    if (momentum != 0) {
      buf[i] = static_cast<T>(momentum) * buf[i] + d;
      d = buf[i];
    }
    p[i] -= lr * d;
  }
}

void SgdKernel(KernelContext& k) {
  cuda::DeviceGuard guard(k.device.index);
  const cudaStream_t stream = cuda::StreamOf(k);
  const LearningRate lr = LearningRateOf(k, 3);
  const double momentum = k.attr().Get<double>("momentum");
  const double wd = k.attr().Get<double>("weight_decay");
  Tensor& param = k.mutable_in(0);
  const int64_t n = param.numel();
  if (n == 0) return;
  OFL_DISPATCH_FLOAT(param.dtype(), T, {
    Sgd<T><<<cuda::BlocksFor(n), cuda::kThreads, 0, stream>>>(
        n, lr, momentum, wd, param.data<T>(), k.in(1).data<T>(), k.mutable_in(2).data<T>());
    OFL_CUDA_LAUNCH_CHECK();
  });
}

struct AdamScalars {
  double lr, correction1, correction2;
};

// step += 1; the step's lr and bias corrections into `out`.
__global__ void AdamPrepare(LearningRate lr, double b1, double b2, int64_t* step,
                            AdamScalars* out) {
  const int64_t s = ++step[0];
  out->lr = Read(lr);
  out->correction1 = 1.0 - pow(b1, static_cast<double>(s));
  out->correction2 = 1.0 - pow(b2, static_cast<double>(s));
}

template <typename T>
__global__ void Adam(int64_t n, const AdamScalars* scalars, double b1, double b2, double eps,
                     double wd, bool decoupled, T* p, const T* g, T* m, T* v) {
  const double lr = scalars->lr;
  const T decay = static_cast<T>(decoupled ? 1.0 - lr * wd : 1.0);
  const T coupled = static_cast<T>(decoupled ? 0.0 : wd);
  const T c1 = static_cast<T>(scalars->correction1), c2 = static_cast<T>(scalars->correction2);
  OFL_KERNEL_LOOP(i, n) {
    T grad = g[i] + coupled * p[i];
    p[i] *= decay;
    m[i] = static_cast<T>(b1) * m[i] + static_cast<T>(1 - b1) * grad;
    v[i] = static_cast<T>(b2) * v[i] + static_cast<T>(1 - b2) * grad * grad;
    const T m_hat = m[i] / c1;
    const T v_hat = v[i] / c2;
    p[i] -= static_cast<T>(lr) * m_hat / (cuda::Sqrt(v_hat) + static_cast<T>(eps));
  }
}

void AdamKernel(KernelContext& k) {
  cuda::DeviceGuard guard(k.device.index);
  const cudaStream_t stream = cuda::StreamOf(k);
  const LearningRate lr = LearningRateOf(k, 5);
  const double b1 = k.attr().Get<double>("beta1");
  const double b2 = k.attr().Get<double>("beta2");
  const double eps = k.attr().Get<double>("eps");
  const double wd = k.attr().Get<double>("weight_decay");
  const bool decoupled = k.attr().Get<bool>("decoupled_weight_decay");
  const cuda::StreamBuffer scalars(sizeof(AdamScalars), stream);
  AdamPrepare<<<1, 1, 0, stream>>>(lr, b1, b2, k.mutable_in(4).data<int64_t>(),
                                   scalars.as<AdamScalars>());
  OFL_CUDA_LAUNCH_CHECK();
  Tensor& param = k.mutable_in(0);
  const int64_t n = param.numel();
  if (n == 0) return;
  OFL_DISPATCH_FLOAT(param.dtype(), T, {
    Adam<T><<<cuda::BlocksFor(n), cuda::kThreads, 0, stream>>>(
        n, scalars.as<AdamScalars>(), b1, b2, eps, wd, decoupled, param.data<T>(),
        k.in(1).data<T>(), k.mutable_in(2).data<T>(), k.mutable_in(3).data<T>());
    OFL_CUDA_LAUNCH_CHECK();
  });
}

}  // namespace

OFL_REGISTER_KERNEL("sgd_update", DeviceType::kCUDA, SgdKernel);
OFL_REGISTER_KERNEL("adam_update", DeviceType::kCUDA, AdamKernel);

}  // namespace ofl
