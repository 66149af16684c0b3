#include "oneflow_lite/core/reduce_sum.h"

#include <glog/logging.h>

#include <algorithm>
#include <cstring>

namespace ofl {

namespace {

// dst and src never overlap (different ranks' buffers, or disjoint parts):
// restrict lets the compiler vectorise without a runtime overlap check.
template <typename T>
void AddInto(T* __restrict dst, const T* __restrict src, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] += src[i];
}

// dst[i] = (init ? init[i] : dst[i]) + srcs[0][i] + srcs[1][i] + ..., added
// left to right (the same sums, bit for bit, as adding one whole source after
// the other), one 4 KiB chunk of dst at a time: the chunk stays in L1 while
// each source's chunk streams past it, so dst is read and written once, not
// once per source. 4 KiB measured fastest among 1-64 KiB, and faster than no
// chunking, on the development machine (3 sources of 16 MiB summed in about
// 2.3 ms instead of 3.5).
template <typename T>
void Scale(T* data, int64_t n, int64_t k) {
  const T scale = static_cast<T>(1) / static_cast<T>(k);
  for (int64_t i = 0; i < n; ++i) data[i] *= scale;
}

template <typename T>
void SumChunked(T* dst, const void* init, const std::vector<const void*>& srcs, int64_t n) {
  constexpr int64_t kChunk = 4096 / sizeof(T);
  const T* first = static_cast<const T*>(init);
  for (int64_t begin = 0; begin < n; begin += kChunk) {
    const int64_t len = std::min(kChunk, n - begin);
    if (first != nullptr) std::memcpy(dst + begin, first + begin, len * sizeof(T));
    for (const void* src : srcs) AddInto(dst + begin, static_cast<const T*>(src) + begin, len);
  }
}

}  // namespace

// SumChunked for a dtype; `init` null: accumulate into dst in place.
void Accumulate(void* dst, const void* init, const std::vector<const void*>& srcs, int64_t n,
                DataType dtype) {
  switch (dtype) {
    case DataType::kFloat32:
      SumChunked(static_cast<float*>(dst), init, srcs, n);
      break;
    case DataType::kFloat64:
      SumChunked(static_cast<double*>(dst), init, srcs, n);
      break;
    case DataType::kInt32:
      SumChunked(static_cast<int32_t*>(dst), init, srcs, n);
      break;
    case DataType::kInt64:
      SumChunked(static_cast<int64_t*>(dst), init, srcs, n);
      break;
    default:
      LOG(FATAL) << "no sum for " << DataTypeName(dtype);
  }
}

bool CanAccumulate(DataType dtype) {
  return dtype == DataType::kFloat32 || dtype == DataType::kFloat64 || dtype == DataType::kInt32 ||
         dtype == DataType::kInt64;
}

void ScaleByInverse(void* data, int64_t n, DataType dtype, int64_t k) {
  CHECK_GT(k, 0);
  switch (dtype) {
    case DataType::kFloat32:
      Scale(static_cast<float*>(data), n, k);
      break;
    case DataType::kFloat64:
      Scale(static_cast<double*>(data), n, k);
      break;
    default:
      LOG(FATAL) << "no scaling of " << DataTypeName(dtype);
  }
}

}  // namespace ofl
