// CPU kernels of embedding and embedding_grad (embedding.cpp registers the
// ops). embedding gathers rows, ParallelFor over ids. Either may hold a
// vocabulary shard (rows [lo, lo + rows) of the logical table, read from
// the weight's input place or dweight's output place): ids outside it give
// zero rows (embedding) or add nothing (embedding_grad). embedding_grad
// scatter-adds dy's rows into a zeroed dweight; ParallelFor runs over
// column ranges of D, so each dweight element has one writer whatever the
// ids repeat (no atomics, deterministic order). An id outside [0, V) fails
// the kernel (ops/index_check.h) before any output is written.
#include <algorithm>
#include <cstring>

#include "ops/index_check.h"
#include "ops/kernel.h"
#include "ops/parallel.h"

namespace ofl {

namespace {

// weight may be a shard of rows [lo, lo + rows) of the logical [V, D]
// weight (split on the vocabulary): ids outside it give zero rows, the
// addends of a partial sum. Ids are checked against the logical V.
template <typename T, typename I>
void Gather(KernelContext& k) {
  const Tensor& weight = k.in(0);
  const int64_t vocab = k.input_logical_shape(0)[0];
  const int64_t lo = k.input_logical_offset(0)[0];
  const int64_t rows = weight.shape()[0];
  const int64_t dim = weight.shape()[1];
  const int64_t n = k.in(1).numel();
  const I* ids = k.in(1).data<I>();
  const int64_t ids_ndim = k.in(1).shape().ndim();
  if (!CheckIndexRange<I>(k, "ids", k.in(1), vocab, "weight.shape[0]",
                          LeadingOffset(k, ids_ndim))) {
    return;
  }
  const T* w = weight.data<T>();
  T* out = k.out(0).data<T>();
  ParallelFor(
      n,
      [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
          const int64_t row = static_cast<int64_t>(ids[i]) - lo;
          if (row >= 0 && row < rows) {
            std::memcpy(out + i * dim, w + row * dim, dim * sizeof(T));
          } else {
            std::fill(out + i * dim, out + (i + 1) * dim, T(0));
          }
        }
      },
      std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(1, dim)));
}

// dweight may be rows [lo, lo + rows) of the logical [num_embeddings, D]
// (output 0's logical place): only ids inside it are added.
template <typename T, typename I>
void ScatterAdd(KernelContext& k) {
  const int64_t n = k.in(0).numel();
  const I* ids = k.in(0).data<I>();
  const T* dy = k.in(1).data<T>();
  Tensor& dweight_t = k.out(0);
  const int64_t rows = dweight_t.shape()[0];
  const int64_t dim = dweight_t.shape()[1];
  const bool placed = k.logical_shape.ndim() == 2 && k.logical_offset.size() == 2;
  const int64_t vocab = placed ? k.logical_shape[0] : rows;
  const int64_t lo = placed ? k.logical_offset[0] : 0;
  if (!CheckIndexRange<I>(k, "ids", k.in(0), vocab, "num_embeddings", {})) return;
  dweight_t.Fill(0.0);
  T* dweight = dweight_t.data<T>();
  ParallelFor(
      dim,
      [&](int64_t begin, int64_t end) {
        for (int64_t i = 0; i < n; ++i) {
          const int64_t row = static_cast<int64_t>(ids[i]) - lo;
          if (row < 0 || row >= rows) continue;
          T* target = dweight + row * dim;
          const T* src = dy + i * dim;
          for (int64_t c = begin; c < end; ++c) target[c] += src[c];
        }
      },
      std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(1, n)));
}

void EmbeddingKernel(KernelContext& k) {
  OFL_DISPATCH_FLOAT(k.in(0).dtype(), T, OFL_DISPATCH_INDEX(k.in(1).dtype(), I, Gather<T, I>(k)));
}

void EmbeddingGradKernel(KernelContext& k) {
  OFL_DISPATCH_FLOAT(k.in(1).dtype(), T,
                     OFL_DISPATCH_INDEX(k.in(0).dtype(), I, ScatterAdd<T, I>(k)));
}

}  // namespace

OFL_REGISTER_KERNEL("embedding", DeviceType::kCPU, EmbeddingKernel);
OFL_REGISTER_KERNEL("embedding_grad", DeviceType::kCPU, EmbeddingGradKernel);

}  // namespace ofl
