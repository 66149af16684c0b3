// CUDA kernels of embedding and embedding_grad (embedding.cpp registers the
// ops). embedding gathers rows, one thread per output element.
// embedding_grad zeroes dweight and scatter-adds dy's rows without atomics:
// thread (bucket b, column c) owns column c of every vocabulary row v with
// v % kBuckets == b and walks the ids in order, so each dweight element has
// one writer that adds in the CPU kernel's order (deterministic, and equal to
// the CPU's sums). An id outside [0, V) is recorded by the device-side check
// (index_check_cuda.h), which reports the CPU kernel's message; the kernels
// skip it (its output row is 0) and never read out of range. As on the CPU,
// either weight may be a vocabulary shard, rows [lo, lo + rows) of the
// logical [V, D] table (embedding: input 0's logical place; embedding_grad:
// output 0's): ids are checked against the logical V, ids outside the shard
// give zero rows (the addends of a partial sum) or add nothing.
#include "ops/cuda_device.cuh"
#include "ops/cuda_util.h"
#include "ops/index_check.h"
#include "ops/index_check_cuda.h"

namespace ofl {

namespace {

constexpr int64_t kBuckets = 32;

template <typename T, typename I>
__global__ void Gather(int64_t n, int64_t dim, int64_t lo, int64_t rows, const T* weight,
                       const I* ids, T* out) {
  OFL_KERNEL_LOOP(e, n * dim) {
    const int64_t row = static_cast<int64_t>(ids[e / dim]) - lo;
    out[e] = row >= 0 && row < rows ? weight[row * dim + e % dim] : T(0);
  }
}

template <typename T, typename I>
__global__ void ScatterAdd(int64_t n, int64_t dim, int64_t lo, int64_t rows, int64_t buckets,
                           const I* ids, const T* dy, T* dweight) {
  OFL_KERNEL_LOOP(t, buckets * dim) {
    const int64_t bucket = t / dim, c = t % dim;
    for (int64_t i = 0; i < n; ++i) {
      const int64_t row = static_cast<int64_t>(ids[i]) - lo;
      if (row < 0 || row >= rows || row % buckets != bucket) continue;
      dweight[row * dim + c] += dy[i * dim + c];
    }
  }
}

void EmbeddingKernel(KernelContext& k) {
  cuda::DeviceGuard guard(k.device.index);
  const cudaStream_t stream = cuda::StreamOf(k);
  const Tensor& weight = k.in(0);
  const Tensor& ids = k.in(1);
  const int64_t rows = weight.shape()[0], dim = weight.shape()[1], n = ids.numel();
  const int64_t vocab = k.input_logical_shape(0)[0];
  const int64_t lo = k.input_logical_offset(0)[0];
  cuda::LaunchIndexCheck(k, "ids", ids, vocab, "weight.shape[0]",
                         LeadingOffset(k, ids.shape().ndim()));
  if (n * dim == 0) return;
  OFL_DISPATCH_FLOAT(weight.dtype(), T, OFL_DISPATCH_INDEX(ids.dtype(), I, {
                       Gather<T, I><<<cuda::BlocksFor(n * dim), cuda::kThreads, 0, stream>>>(
                           n, dim, lo, rows, weight.data<T>(), ids.data<I>(), k.out(0).data<T>());
                       OFL_CUDA_LAUNCH_CHECK();
                     }));
}

void EmbeddingGradKernel(KernelContext& k) {
  cuda::DeviceGuard guard(k.device.index);
  const cudaStream_t stream = cuda::StreamOf(k);
  const Tensor& ids = k.in(0);
  Tensor& dweight = k.out(0);
  const int64_t rows = dweight.shape()[0], dim = dweight.shape()[1], n = ids.numel();
  const bool placed = k.logical_shape.ndim() == 2 && k.logical_offset.size() == 2;
  const int64_t vocab = placed ? k.logical_shape[0] : rows;
  const int64_t lo = placed ? k.logical_offset[0] : 0;
  cuda::LaunchIndexCheck(k, "ids", ids, vocab, "num_embeddings", {});
  cuda::Fill(dweight, 0.0, stream);
  if (n * dim == 0 || rows == 0) return;
  const int64_t buckets = std::min(kBuckets, rows);
  OFL_DISPATCH_FLOAT(
      k.in(1).dtype(), T, OFL_DISPATCH_INDEX(ids.dtype(), I, {
        ScatterAdd<T, I><<<cuda::BlocksFor(buckets * dim), cuda::kThreads, 0, stream>>>(
            n, dim, lo, rows, buckets, ids.data<I>(), k.in(1).data<T>(), dweight.data<T>());
        OFL_CUDA_LAUNCH_CHECK();
      }));
}

}  // namespace

OFL_REGISTER_KERNEL("embedding", DeviceType::kCUDA, EmbeddingKernel);
OFL_REGISTER_KERNEL("embedding_grad", DeviceType::kCUDA, EmbeddingGradKernel);

}  // namespace ofl
