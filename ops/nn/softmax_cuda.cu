// CUDA kernels of softmax, log_softmax and their backward ops (softmax.cpp
// registers the ops). The tensor is viewed as [outer, n, inner] around the
// axis; one block reduces one (outer, inner) row of n elements (strided by
// inner) with fixed-order block reductions, so results are deterministic.
// The formulas are softmax_cpu.cpp's; the row maximum propagates NaN.
#include "ops/cuda_device.cuh"
#include "ops/cuda_util.h"
#include "ops/nn/softmax_view.h"

namespace ofl {

namespace {

unsigned RowBlocks(int64_t rows) { return static_cast<unsigned>(std::min<int64_t>(rows, 65536)); }

template <typename T>
__global__ void Forward(int64_t rows, int64_t n, int64_t inner, const T* x, T* y, bool log_output) {
  __shared__ T scratch[32];
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const T* xr = x + (row / inner) * n * inner + row % inner;
    T* yr = y + (row / inner) * n * inner + row % inner;
    T max = -cuda::Infinity<T>();
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) max = cuda::NanMax(max, xr[j * inner]);
    max = cuda::BlockReduce(max, cuda::NanMaxOp(), scratch);
    T sum = 0;
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) sum += cuda::Exp(xr[j * inner] - max);
    sum = cuda::BlockReduce(sum, cuda::SumOp(), scratch);
    const T factor = log_output ? max + cuda::Log(sum) : T(1) / sum;
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
      const T v = xr[j * inner];
      yr[j * inner] = log_output ? v - factor : cuda::Exp(v - max) * factor;
    }
  }
}

// softmax: dx = y * (dy - sum(dy * y)); log_softmax: dx = dy - exp(y) * sum(dy).
template <typename T>
__global__ void Backward(int64_t rows, int64_t n, int64_t inner, const T* y, const T* dy, T* dx,
                         bool log_output) {
  __shared__ T scratch[32];
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const int64_t base = (row / inner) * n * inner + row % inner;
    T sum = 0;
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
      const int64_t r = base + j * inner;
      sum += log_output ? dy[r] : dy[r] * y[r];
    }
    sum = cuda::BlockReduce(sum, cuda::SumOp(), scratch);
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
      const int64_t r = base + j * inner;
      dx[r] = log_output ? dy[r] - cuda::Exp(y[r]) * sum : y[r] * (dy[r] - sum);
    }
  }
}

// The set-up the four kernels share: the view of k.in(0) around the axis and
// one block per (outer, inner) row. Calls launch(T(), view, rows, blocks,
// stream) with T the dtype's type, then checks the launch.
template <typename Launch>
void LaunchRows(KernelContext& k, Launch launch) {
  cuda::DeviceGuard guard(k.device.index);
  const cudaStream_t stream = cuda::StreamOf(k);
  const AxisView v = ViewAround(k.in(0).shape(), k.attr().Get<int64_t>("axis"));
  const int64_t rows = v.outer * v.inner;
  if (rows == 0 || v.n == 0) return;
  OFL_DISPATCH_FLOAT(k.in(0).dtype(), T, {
    launch(T(), v, rows, RowBlocks(rows), stream);
    OFL_CUDA_LAUNCH_CHECK();
  });
}

KernelFn ForwardKernel(bool log_output) {
  return [log_output](KernelContext& k) {
    LaunchRows(
        k, [&](auto zero, const AxisView& v, int64_t rows, unsigned blocks, cudaStream_t stream) {
          using T = decltype(zero);
          Forward<T><<<blocks, cuda::kThreads, 0, stream>>>(rows, v.n, v.inner, k.in(0).data<T>(),
                                                            k.out(0).data<T>(), log_output);
        });
  };
}

// Inputs y, dy.
KernelFn BackwardKernel(bool log_output) {
  return [log_output](KernelContext& k) {
    LaunchRows(k, [&](auto zero, const AxisView& v, int64_t rows, unsigned blocks,
                      cudaStream_t stream) {
      using T = decltype(zero);
      Backward<T><<<blocks, cuda::kThreads, 0, stream>>>(
          rows, v.n, v.inner, k.in(0).data<T>(), k.in(1).data<T>(), k.out(0).data<T>(), log_output);
    });
  };
}

}  // namespace

OFL_REGISTER_KERNEL("softmax", DeviceType::kCUDA, ForwardKernel(false));
OFL_REGISTER_KERNEL("log_softmax", DeviceType::kCUDA, ForwardKernel(true));
OFL_REGISTER_KERNEL("softmax_grad", DeviceType::kCUDA, BackwardKernel(false));
OFL_REGISTER_KERNEL("log_softmax_grad", DeviceType::kCUDA, BackwardKernel(true));

}  // namespace ofl
