// CUDA kernels of sparse_softmax_cross_entropy and its backward op
// (cross_entropy.cpp registers the ops). Logits are rows of C classes; one
// block computes a row's log-sum-exp with fixed-order block reductions (the
// maximum propagates NaN), as cross_entropy_cpu.cpp. A label outside [0, C)
// is recorded by the device-side check (index_check_cuda.h), which reports
// the CPU kernel's message when the stream's owner takes the error; such a
// row's outputs are left 0 and never read out of range.
#include "ops/cuda_device.cuh"
#include "ops/cuda_util.h"
#include "ops/index_check.h"
#include "ops/index_check_cuda.h"
#include "ops/nn/logit_rows.h"

namespace ofl {

namespace {

// log(sum(exp(row))) of the block's row; every thread gets it.
template <typename T>
__device__ T BlockLogSumExp(const T* row, int64_t classes, T* scratch) {
  T max = -cuda::Infinity<T>();
  for (int64_t c = threadIdx.x; c < classes; c += blockDim.x) max = cuda::NanMax(max, row[c]);
  max = cuda::BlockReduce(max, cuda::NanMaxOp(), scratch);
  T sum = 0;
  for (int64_t c = threadIdx.x; c < classes; c += blockDim.x) sum += cuda::Exp(row[c] - max);
  sum = cuda::BlockReduce(sum, cuda::SumOp(), scratch);
  return max + cuda::Log(sum);
}

template <typename T, typename L>
__global__ void Forward(int64_t rows, int64_t classes, const T* logits, const L* labels, T* loss) {
  __shared__ T scratch[32];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* row = logits + r * classes;
    const T lse = BlockLogSumExp(row, classes, scratch);
    const int64_t label = static_cast<int64_t>(labels[r]);
    if (threadIdx.x == 0) loss[r] = label >= 0 && label < classes ? lse - row[label] : T(0);
  }
}

template <typename T, typename L>
__global__ void Backward(int64_t rows, int64_t classes, const T* logits, const L* labels,
                         const T* dy, T* dlogits) {
  __shared__ T scratch[32];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* row = logits + r * classes;
    T* out = dlogits + r * classes;
    const T lse = BlockLogSumExp(row, classes, scratch);
    const int64_t label = static_cast<int64_t>(labels[r]);
    for (int64_t c = threadIdx.x; c < classes; c += blockDim.x) {
      T v = cuda::Exp(row[c] - lse) * dy[r];
      if (c == label) v -= dy[r];
      out[c] = v;
    }
  }
}

unsigned RowBlocks(int64_t rows) { return static_cast<unsigned>(std::min<int64_t>(rows, 65536)); }

// The set-up both kernels share: the logits' rows, the labels' device-side
// check and one block per row. Calls launch(T(), L(), shape, blocks, stream)
// with T and L the logits' and labels' types, then checks the launch.
template <typename Launch>
void LaunchRows(KernelContext& k, Launch launch) {
  cuda::DeviceGuard guard(k.device.index);
  const cudaStream_t stream = cuda::StreamOf(k);
  const LogitRows shape = LogitRowsOf(k.in(0));
  const Tensor& l = k.in(1);
  cuda::LaunchIndexCheck(k, "labels", l, shape.classes, "logits.shape[-1]",
                         LeadingOffset(k, l.shape().ndim()));
  if (shape.rows == 0) return;
  OFL_DISPATCH_FLOAT(k.in(0).dtype(), T, OFL_DISPATCH_INDEX(l.dtype(), L, {
                       launch(T(), L(), shape, RowBlocks(shape.rows), stream);
                       OFL_CUDA_LAUNCH_CHECK();
                     }));
}

void CrossEntropyKernel(KernelContext& k) {
  LaunchRows(k, [&](auto t, auto l, const LogitRows& r, unsigned blocks, cudaStream_t stream) {
    using T = decltype(t);
    using L = decltype(l);
    Forward<T, L><<<blocks, cuda::kThreads, 0, stream>>>(r.rows, r.classes, k.in(0).data<T>(),
                                                         k.in(1).data<L>(), k.out(0).data<T>());
  });
}

// Inputs logits, labels, dy.
void CrossEntropyGradKernel(KernelContext& k) {
  LaunchRows(k, [&](auto t, auto l, const LogitRows& r, unsigned blocks, cudaStream_t stream) {
    using T = decltype(t);
    using L = decltype(l);
    Backward<T, L><<<blocks, cuda::kThreads, 0, stream>>>(r.rows, r.classes, k.in(0).data<T>(),
                                                          k.in(1).data<L>(), k.in(2).data<T>(),
                                                          k.out(0).data<T>());
  });
}

}  // namespace

OFL_REGISTER_KERNEL("sparse_softmax_cross_entropy", DeviceType::kCUDA, CrossEntropyKernel);
OFL_REGISTER_KERNEL("sparse_softmax_cross_entropy_grad", DeviceType::kCUDA, CrossEntropyGradKernel);

}  // namespace ofl
