// The strided copy, sum and scaling kernels (device_kernels.h).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>

#include "oneflow_lite/core/cuda/cuda_check.h"
#include "oneflow_lite/core/cuda/device_kernels.h"
#include "oneflow_lite/core/cuda/kernel_index.cuh"

namespace ofl::cuda {

namespace {

constexpr int kThreads = 256;
constexpr int kMaxSources = 16;  // per sum launch; more sources take more launches

// Blocks for a grid-stride loop over n elements (1 to `most`).
unsigned BlocksFor(int64_t n, int64_t most) {
  return static_cast<unsigned>(std::clamp<int64_t>((n + kThreads - 1) / kThreads, 1, most));
}

template <typename W>
__global__ void StridedCopyKernel(int64_t n, Dims extent, const W* src, Dims src_strides, W* dst,
                                  Dims dst_strides) {
  OFL_KERNEL_LOOP(i, n) {
    dst[OffsetOf(i, extent, dst_strides)] = src[OffsetOf(i, extent, src_strides)];
  }
}

template <typename W>
void LaunchStridedCopy(int64_t n, const Dims& e, const void* src, const Dims& s, void* dst,
                       const Dims& d, cudaStream_t stream) {
  StridedCopyKernel<<<BlocksFor(n, 65536), kThreads, 0, stream>>>(n, e, static_cast<const W*>(src),
                                                                  s, static_cast<W*>(dst), d);
}

template <typename T>
struct Sources {
  const T* p[kMaxSources];
  int count;
};

template <typename T>
struct AccType {
  using type = T;
};
template <>
struct AccType<__nv_bfloat16> {
  using type = float;
};
template <>
struct AccType<__half> {
  using type = float;
};

template <typename T>
__global__ void AccumulateKernel(T* dst, const T* init, Sources<T> srcs, int64_t n) {
  using Acc = typename AccType<T>::type;
  OFL_KERNEL_LOOP(i, n) {
    Acc sum = static_cast<Acc>(init != nullptr ? init[i] : dst[i]);
    for (int k = 0; k < srcs.count; ++k) sum = sum + static_cast<Acc>(srcs.p[k][i]);
    dst[i] = static_cast<T>(sum);
  }
}

template <typename T>
void LaunchAccumulate(void* dst, const void* init, const std::vector<const void*>& srcs, int64_t n,
                      cudaStream_t stream) {
  const unsigned blocks = BlocksFor(n, 4096);
  size_t done = 0;
  do {  // one launch per kMaxSources sources; the first adds to init, the rest to dst
    Sources<T> chunk{};
    chunk.count = static_cast<int>(std::min<size_t>(kMaxSources, srcs.size() - done));
    for (int k = 0; k < chunk.count; ++k) chunk.p[k] = static_cast<const T*>(srcs[done + k]);
    AccumulateKernel<T><<<blocks, kThreads, 0, stream>>>(
        static_cast<T*>(dst), done == 0 ? static_cast<const T*>(init) : nullptr, chunk, n);
    OFL_CUDA_CHECK(cudaGetLastError());
    done += chunk.count;
  } while (done < srcs.size());
}

template <typename T>
__global__ void ScaleKernel(T* data, int64_t n, int64_t k) {
  const T scale = static_cast<T>(1) / static_cast<T>(k);
  OFL_KERNEL_LOOP(i, n) { data[i] *= scale; }
}

}  // namespace

void StridedCopy(const std::vector<int64_t>& extent, int64_t element_size, const void* src,
                 const std::vector<int64_t>& src_strides, void* dst,
                 const std::vector<int64_t>& dst_strides, cudaStream_t stream) {
  int64_t n = 1;
  for (int64_t e : extent) n *= e;
  if (n == 0) return;
  const Dims e = ToDims(extent), s = ToDims(src_strides), d = ToDims(dst_strides);
  switch (element_size) {
    case 1:
      LaunchStridedCopy<uint8_t>(n, e, src, s, dst, d, stream);
      break;
    case 2:
      LaunchStridedCopy<uint16_t>(n, e, src, s, dst, d, stream);
      break;
    case 4:
      LaunchStridedCopy<uint32_t>(n, e, src, s, dst, d, stream);
      break;
    case 8:
      LaunchStridedCopy<uint64_t>(n, e, src, s, dst, d, stream);
      break;
    default:
      LOG(FATAL) << "StridedCopy: element size " << element_size << " is not 1, 2, 4 or 8";
  }
  OFL_CUDA_CHECK(cudaGetLastError());
}

void Accumulate(void* dst, const void* init, const std::vector<const void*>& srcs, int64_t n,
                DataType dtype, cudaStream_t stream) {
  if (n == 0) return;
  switch (dtype) {
    case DataType::kFloat32:
      LaunchAccumulate<float>(dst, init, srcs, n, stream);
      break;
    case DataType::kFloat64:
      LaunchAccumulate<double>(dst, init, srcs, n, stream);
      break;
    case DataType::kInt32:
      LaunchAccumulate<int32_t>(dst, init, srcs, n, stream);
      break;
    case DataType::kInt64:
      LaunchAccumulate<int64_t>(dst, init, srcs, n, stream);
      break;
    case DataType::kBFloat16:
      LaunchAccumulate<__nv_bfloat16>(dst, init, srcs, n, stream);
      break;
    case DataType::kFloat16:
      LaunchAccumulate<__half>(dst, init, srcs, n, stream);
      break;
    case DataType::kBool:
      LOG(FATAL) << "cuda::Accumulate: no sum of bool tensors";
  }
}

void ScaleByInverse(void* data, int64_t n, DataType dtype, int64_t k, cudaStream_t stream) {
  CHECK_GT(k, 0);
  if (n == 0) return;
  const unsigned blocks = BlocksFor(n, 65536);
  switch (dtype) {
    case DataType::kFloat32:
      ScaleKernel<<<blocks, kThreads, 0, stream>>>(static_cast<float*>(data), n, k);
      break;
    case DataType::kFloat64:
      ScaleKernel<<<blocks, kThreads, 0, stream>>>(static_cast<double*>(data), n, k);
      break;
    default:
      LOG(FATAL) << "cuda::ScaleByInverse: no scaling of " << DataTypeName(dtype);
  }
  OFL_CUDA_CHECK(cudaGetLastError());
}

}  // namespace ofl::cuda
