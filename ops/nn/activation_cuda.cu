// CUDA kernels of the pointwise activations and their backward ops
// (activation.cpp registers the ops): grid-stride maps with the formulas of
// activation_cpu.cpp (relu's NaN rule, gelu through erfc, the stable sigmoid).
// bfloat16 computes in float.
#include "ops/cuda_device.cuh"
#include "ops/cuda_util.h"

namespace ofl {

namespace {

constexpr double kInvSqrt2 = 0.70710678118654752440;
constexpr double kInvSqrt2Pi = 0.39894228040143267794;

struct Relu {
  template <typename T>
  __device__ T operator()(T x) const {
    return x <= T(0) ? T(0) : x;
  }
};
struct ReluGrad {
  template <typename T>
  __device__ T operator()(T y, T dy) const {
    return y <= T(0) ? T(0) : dy;
  }
};
struct Gelu {
  template <typename T>
  __device__ T operator()(T x) const {
    return T(0.5) * x * cuda::Erfc(-x * T(kInvSqrt2));
  }
};
struct GeluGrad {
  template <typename T>
  __device__ T operator()(T x, T dy) const {
    const T cdf = T(0.5) * cuda::Erfc(-x * T(kInvSqrt2));
    const T pdf = cuda::Exp(T(-0.5) * x * x) * T(kInvSqrt2Pi);
    return dy * (cdf + x * pdf);
  }
};
struct Tanh {
  template <typename T>
  __device__ T operator()(T x) const {
    return cuda::Tanh(x);
  }
};
struct TanhGrad {
  template <typename T>
  __device__ T operator()(T y, T dy) const {
    return dy * (T(1) - y * y);
  }
};
struct Sigmoid {
  template <typename T>
  __device__ T operator()(T x) const {
    if (x >= T(0)) return T(1) / (T(1) + cuda::Exp(-x));
    const T e = cuda::Exp(x);
    return e / (T(1) + e);
  }
};
struct SigmoidGrad {
  template <typename T>
  __device__ T operator()(T y, T dy) const {
    return dy * y * (T(1) - y);
  }
};

template <typename T, typename F>
__global__ void MapUnary(int64_t n, const T* x, T* y, F f) {
  OFL_KERNEL_LOOP(i, n) { y[i] = cuda::Store<T>(f(cuda::Load(x[i]))); }
}

template <typename T, typename F>
__global__ void MapBinary(int64_t n, const T* v, const T* dy, T* dx, F f) {
  OFL_KERNEL_LOOP(i, n) { dx[i] = cuda::Store<T>(f(cuda::Load(v[i]), cuda::Load(dy[i]))); }
}

template <typename F>
KernelFn UnaryKernel(F f) {
  return [f](KernelContext& k) {
    cuda::DeviceGuard guard(k.device.index);
    const cudaStream_t stream = cuda::StreamOf(k);
    const int64_t n = k.out(0).numel();
    if (n == 0) return;
    OFL_CUDA_DISPATCH_FLOAT(k.in(0).dtype(), T, {
      MapUnary<<<cuda::BlocksFor(n), cuda::kThreads, 0, stream>>>(n, cuda::Data<T>(k.in(0)),
                                                                  cuda::Data<T>(k.out(0)), f);
      OFL_CUDA_LAUNCH_CHECK();
    });
  };
}

template <typename F>
KernelFn BinaryKernel(F f) {
  return [f](KernelContext& k) {
    cuda::DeviceGuard guard(k.device.index);
    const cudaStream_t stream = cuda::StreamOf(k);
    const int64_t n = k.out(0).numel();
    if (n == 0) return;
    OFL_CUDA_DISPATCH_FLOAT(k.in(0).dtype(), T, {
      MapBinary<<<cuda::BlocksFor(n), cuda::kThreads, 0, stream>>>(
          n, cuda::Data<T>(k.in(0)), cuda::Data<T>(k.in(1)), cuda::Data<T>(k.out(0)), f);
      OFL_CUDA_LAUNCH_CHECK();
    });
  };
}

}  // namespace

OFL_REGISTER_KERNEL("relu", DeviceType::kCUDA, UnaryKernel(Relu()));
OFL_REGISTER_KERNEL("relu_grad", DeviceType::kCUDA, BinaryKernel(ReluGrad()));
OFL_REGISTER_KERNEL("gelu", DeviceType::kCUDA, UnaryKernel(Gelu()));
OFL_REGISTER_KERNEL("gelu_grad", DeviceType::kCUDA, BinaryKernel(GeluGrad()));
OFL_REGISTER_KERNEL("tanh", DeviceType::kCUDA, UnaryKernel(Tanh()));
OFL_REGISTER_KERNEL("tanh_grad", DeviceType::kCUDA, BinaryKernel(TanhGrad()));
OFL_REGISTER_KERNEL("sigmoid", DeviceType::kCUDA, UnaryKernel(Sigmoid()));
OFL_REGISTER_KERNEL("sigmoid_grad", DeviceType::kCUDA, BinaryKernel(SigmoidGrad()));

}  // namespace ofl
