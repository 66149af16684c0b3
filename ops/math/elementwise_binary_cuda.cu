// CUDA kernels of add, sub, mul, div: a grid-stride loop over the output;
// equal shapes index flat, other shapes through each operand's broadcast
// strides (broadcast_index.cuh), as elementwise_binary_cpu.cpp. bfloat16
// computes in float and rounds once per element.
#include "ops/cuda_util.h"
#include "ops/math/broadcast_index.cuh"

namespace ofl {

namespace {

struct AddOp {
  template <typename T>
  __device__ T operator()(T a, T b) const {
    return a + b;
  }
};
struct SubOp {
  template <typename T>
  __device__ T operator()(T a, T b) const {
    return a - b;
  }
};
struct MulOp {
  template <typename T>
  __device__ T operator()(T a, T b) const {
    return a * b;
  }
};
struct DivOp {
  template <typename T>
  __device__ T operator()(T a, T b) const {
    return a / b;
  }
};

template <typename T, typename Op>
__global__ void FlatBinary(int64_t n, const T* a, const T* b, T* y, Op op) {
  OFL_KERNEL_LOOP(i, n) { y[i] = cuda::Store<T>(op(cuda::Load(a[i]), cuda::Load(b[i]))); }
}

template <typename T, typename Op>
__global__ void BroadcastBinary(int64_t n, cuda::BroadcastIndex index, const T* a, const T* b, T* y,
                                Op op) {
  OFL_KERNEL_LOOP(i, n) {
    y[i] = cuda::Store<T>(op(cuda::Load(a[cuda::OperandOffset(index, 0, i)]),
                             cuda::Load(b[cuda::OperandOffset(index, 1, i)])));
  }
}

template <typename T, typename Op>
void Binary(const Tensor& ta, const Tensor& tb, Tensor& tout, Op op, cudaStream_t stream) {
  const int64_t n = tout.numel();
  if (n == 0) return;
  const T* a = cuda::Data<T>(ta);
  const T* b = cuda::Data<T>(tb);
  T* y = cuda::Data<T>(tout);
  if (ta.shape() == tout.shape() && tb.shape() == tout.shape()) {
    FlatBinary<<<cuda::BlocksFor(n), cuda::kThreads, 0, stream>>>(n, a, b, y, op);
  } else {
    const cuda::BroadcastIndex index =
        cuda::ToBroadcastIndex(math::MakeBroadcastLayout(tout.shape(), {ta.shape(), tb.shape()}));
    BroadcastBinary<<<cuda::BlocksFor(n), cuda::kThreads, 0, stream>>>(n, index, a, b, y, op);
  }
  OFL_CUDA_LAUNCH_CHECK();
}

template <typename Op>
KernelFn BinaryKernel(Op op) {
  return [op](KernelContext& kc) {
    cuda::DeviceGuard guard(kc.device.index);
    const cudaStream_t stream = cuda::StreamOf(kc);
    Tensor& out = kc.out(0);
    OFL_CUDA_DISPATCH_FLOAT(out.dtype(), T, Binary<T>(kc.in(0), kc.in(1), out, op, stream));
  };
}

OFL_REGISTER_KERNEL("add", DeviceType::kCUDA, BinaryKernel(AddOp()));
OFL_REGISTER_KERNEL("sub", DeviceType::kCUDA, BinaryKernel(SubOp()));
OFL_REGISTER_KERNEL("mul", DeviceType::kCUDA, BinaryKernel(MulOp()));
OFL_REGISTER_KERNEL("div", DeviceType::kCUDA, BinaryKernel(DivOp()));

}  // namespace
}  // namespace ofl
