// CUDA kernels of the comparisons (compare.cpp): a grid-stride loop over the
// output, each input read through its broadcast strides (broadcast_index.cuh),
// as compare_cpu.cpp.
#include "ops/cuda_util.h"
#include "ops/math/broadcast_index.cuh"

namespace ofl {

namespace {

struct EqualOp {
  template <typename T>
  __device__ bool operator()(T a, T b) const {
    return a == b;
  }
};
struct NotEqualOp {
  template <typename T>
  __device__ bool operator()(T a, T b) const {
    return a != b;
  }
};
struct LessOp {
  template <typename T>
  __device__ bool operator()(T a, T b) const {
    return a < b;
  }
};
struct LessEqualOp {
  template <typename T>
  __device__ bool operator()(T a, T b) const {
    return a <= b;
  }
};
struct GreaterOp {
  template <typename T>
  __device__ bool operator()(T a, T b) const {
    return a > b;
  }
};
struct GreaterEqualOp {
  template <typename T>
  __device__ bool operator()(T a, T b) const {
    return a >= b;
  }
};

template <typename T, typename Op>
__global__ void CompareKernelBody(int64_t n, cuda::BroadcastIndex index, const T* a, const T* b,
                                  bool* y, Op op) {
  OFL_KERNEL_LOOP(i, n) {
    y[i] = op(a[cuda::OperandOffset(index, 0, i)], b[cuda::OperandOffset(index, 1, i)]);
  }
}

template <typename T, typename Op>
void Compare(const Tensor& ta, const Tensor& tb, Tensor& tout, Op op, cudaStream_t stream) {
  const int64_t n = tout.numel();
  if (n == 0) return;
  const cuda::BroadcastIndex index =
      cuda::ToBroadcastIndex(math::MakeBroadcastLayout(tout.shape(), {ta.shape(), tb.shape()}));
  CompareKernelBody<<<cuda::BlocksFor(n), cuda::kThreads, 0, stream>>>(
      n, index, cuda::Data<T>(ta), cuda::Data<T>(tb), cuda::Data<bool>(tout), op);
  OFL_CUDA_LAUNCH_CHECK();
}

template <typename Op>
KernelFn CompareKernel(Op op) {
  return [op](KernelContext& kc) {
    cuda::DeviceGuard guard(kc.device.index);
    const cudaStream_t stream = cuda::StreamOf(kc);
    OFL_CUDA_DISPATCH_VALUE(kc.in(0).dtype(), T,
                            Compare<T>(kc.in(0), kc.in(1), kc.out(0), op, stream));
  };
}

OFL_REGISTER_KERNEL("equal", DeviceType::kCUDA, CompareKernel(EqualOp()));
OFL_REGISTER_KERNEL("not_equal", DeviceType::kCUDA, CompareKernel(NotEqualOp()));
OFL_REGISTER_KERNEL("less", DeviceType::kCUDA, CompareKernel(LessOp()));
OFL_REGISTER_KERNEL("less_equal", DeviceType::kCUDA, CompareKernel(LessEqualOp()));
OFL_REGISTER_KERNEL("greater", DeviceType::kCUDA, CompareKernel(GreaterOp()));
OFL_REGISTER_KERNEL("greater_equal", DeviceType::kCUDA, CompareKernel(GreaterEqualOp()));

}  // namespace
}  // namespace ofl
