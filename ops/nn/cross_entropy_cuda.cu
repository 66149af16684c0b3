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

int64_t NumClasses(const Tensor& logits) { return logits.shape()[logits.shape().ndim() - 1]; }

unsigned RowBlocks(int64_t rows) { return static_cast<unsigned>(std::min<int64_t>(rows, 65536)); }

void CheckLabels(KernelContext& k, int64_t classes) {
  const Tensor& l = k.in(1);
  cuda::LaunchIndexCheck(k, "labels", l, classes, "logits.shape[-1]",
                         LeadingOffset(k, l.shape().ndim()));
}

void CrossEntropyKernel(KernelContext& k) {
  cuda::DeviceGuard guard(k.device.index);
  const cudaStream_t stream = cuda::StreamOf(k);
  const int64_t classes = NumClasses(k.in(0));
  const int64_t rows = classes == 0 ? 0 : k.in(0).numel() / classes;
  CheckLabels(k, classes);
  if (rows == 0) return;
  OFL_DISPATCH_FLOAT(k.in(0).dtype(), T, OFL_DISPATCH_INDEX(k.in(1).dtype(), L, {
                       Forward<T, L><<<RowBlocks(rows), cuda::kThreads, 0, stream>>>(
                           rows, classes, k.in(0).data<T>(), k.in(1).data<L>(), k.out(0).data<T>());
                       OFL_CUDA_LAUNCH_CHECK();
                     }));
}

void CrossEntropyGradKernel(KernelContext& k) {
  cuda::DeviceGuard guard(k.device.index);
  const cudaStream_t stream = cuda::StreamOf(k);
  const int64_t classes = NumClasses(k.in(0));
  const int64_t rows = classes == 0 ? 0 : k.in(0).numel() / classes;
  CheckLabels(k, classes);
  if (rows == 0) return;
  OFL_DISPATCH_FLOAT(k.in(0).dtype(), T, OFL_DISPATCH_INDEX(k.in(1).dtype(), L, {
                       Backward<T, L><<<RowBlocks(rows), cuda::kThreads, 0, stream>>>(
                           rows, classes, k.in(0).data<T>(), k.in(1).data<L>(), k.in(2).data<T>(),
                           k.out(0).data<T>());
                       OFL_CUDA_LAUNCH_CHECK();
                     }));
}

}  // namespace

OFL_REGISTER_KERNEL("sparse_softmax_cross_entropy", DeviceType::kCUDA, CrossEntropyKernel);
OFL_REGISTER_KERNEL("sparse_softmax_cross_entropy_grad", DeviceType::kCUDA, CrossEntropyGradKernel);

}  // namespace ofl
