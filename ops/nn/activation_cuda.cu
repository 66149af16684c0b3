// CUDA kernels of the pointwise activations and their backward ops
// (activation.cpp registers the ops): grid-stride maps with the formulas of
// activation_cpu.cpp (relu's NaN rule, gelu through erfc, the stable sigmoid).
// bfloat16 computes in float.
#include <utility>

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

// out[i] = f(in[i]...) over the inputs (x; or y or x, and dy), computed in
// Compute<T>.
template <typename T, typename F, typename... In>
__global__ void Map(int64_t n, F f, T* out, const In*... in) {
  OFL_KERNEL_LOOP(i, n) { out[i] = cuda::Store<T>(f(cuda::Load(in[i])...)); }
}

template <typename F, size_t... I>
void LaunchMap(KernelContext& k, F f, std::index_sequence<I...>) {
  cuda::DeviceGuard guard(k.device.index);
  const cudaStream_t stream = cuda::StreamOf(k);
  const int64_t n = k.out(0).numel();
  if (n == 0) return;
  OFL_CUDA_DISPATCH_FLOAT(k.in(0).dtype(), T, {
    Map<<<cuda::BlocksFor(n), cuda::kThreads, 0, stream>>>(n, f, cuda::Data<T>(k.out(0)),
                                                           cuda::Data<T>(k.in(I))...);
    OFL_CUDA_LAUNCH_CHECK();
  });
}

// The kernel mapping f over the op's first kInputs inputs: 1 for an
// activation, 2 for its backward op.
template <size_t kInputs, typename F>
KernelFn MapKernel(F f) {
  return [f](KernelContext& k) { LaunchMap(k, f, std::make_index_sequence<kInputs>()); };
}

}  // namespace

OFL_REGISTER_KERNEL("relu", DeviceType::kCUDA, MapKernel<1>(Relu()));
OFL_REGISTER_KERNEL("relu_grad", DeviceType::kCUDA, MapKernel<2>(ReluGrad()));
OFL_REGISTER_KERNEL("gelu", DeviceType::kCUDA, MapKernel<1>(Gelu()));
OFL_REGISTER_KERNEL("gelu_grad", DeviceType::kCUDA, MapKernel<2>(GeluGrad()));
OFL_REGISTER_KERNEL("tanh", DeviceType::kCUDA, MapKernel<1>(Tanh()));
OFL_REGISTER_KERNEL("tanh_grad", DeviceType::kCUDA, MapKernel<2>(TanhGrad()));
OFL_REGISTER_KERNEL("sigmoid", DeviceType::kCUDA, MapKernel<1>(Sigmoid()));
OFL_REGISTER_KERNEL("sigmoid_grad", DeviceType::kCUDA, MapKernel<2>(SigmoidGrad()));

}  // namespace ofl
