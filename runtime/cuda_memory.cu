#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>

#include "oneflow_lite/core/cuda/cuda_check.h"
#include "oneflow_lite/core/cuda/cuda_device_context.h"
#include "ops/array/strided_copy.h"
#include "ops/cuda_util.h"
#include "runtime/cuda_memory.h"

namespace ofl {

namespace {

constexpr int kMaxSources = 16;  // per launch; more sources take more launches

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
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    Acc sum = static_cast<Acc>(init != nullptr ? init[i] : dst[i]);
    for (int k = 0; k < srcs.count; ++k) sum = sum + static_cast<Acc>(srcs.p[k][i]);
    dst[i] = static_cast<T>(sum);
  }
}

template <typename T>
void Launch(void* dst, const void* init, const std::vector<const void*>& srcs, int64_t n,
            cudaStream_t stream) {
  const int threads = 256;
  const int blocks = static_cast<int>(std::min<int64_t>((n + threads - 1) / threads, 4096));
  size_t done = 0;
  do {  // one launch per kMaxSources sources; the first adds to init, the rest to dst
    Sources<T> chunk{};
    chunk.count = static_cast<int>(std::min<size_t>(kMaxSources, srcs.size() - done));
    for (int k = 0; k < chunk.count; ++k) chunk.p[k] = static_cast<const T*>(srcs[done + k]);
    AccumulateKernel<T><<<blocks, threads, 0, stream>>>(
        static_cast<T*>(dst), done == 0 ? static_cast<const T*>(init) : nullptr, chunk, n);
    OFL_CUDA_CHECK(cudaGetLastError());
    done += chunk.count;
  } while (done < srcs.size());
}

void LaunchAccumulate(void* dst, const void* init, const std::vector<const void*>& srcs, int64_t n,
                      DataType dtype, cudaStream_t stream) {
  switch (dtype) {
    case DataType::kFloat32: Launch<float>(dst, init, srcs, n, stream); break;
    case DataType::kFloat64: Launch<double>(dst, init, srcs, n, stream); break;
    case DataType::kInt32: Launch<int32_t>(dst, init, srcs, n, stream); break;
    case DataType::kInt64: Launch<int64_t>(dst, init, srcs, n, stream); break;
    case DataType::kBFloat16: Launch<__nv_bfloat16>(dst, init, srcs, n, stream); break;
    case DataType::kFloat16: Launch<__half>(dst, init, srcs, n, stream); break;
    case DataType::kBool: LOG(FATAL) << "CudaAccumulate: no sum of bool tensors";
  }
}

}  // namespace

void CudaAccumulate(int ordinal, void* dst, const void* init, const std::vector<const void*>& srcs,
                    int64_t n, DataType dtype) {
  if (n == 0) return;
  CudaDeviceGuard guard(ordinal);
  cudaStream_t stream;
  OFL_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  LaunchAccumulate(dst, init, srcs, n, dtype, stream);
  OFL_CUDA_CHECK(cudaStreamSynchronize(stream));
  OFL_CUDA_CHECK(cudaStreamDestroy(stream));
}

InProcessMemory CudaMemory(int ordinal) {
  InProcessMemory memory;
  memory.copy = [ordinal](void* dst, const void* src, int64_t bytes) {
    if (bytes == 0) return;
    CudaDeviceGuard guard(ordinal);
    cudaStream_t stream;
    OFL_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    OFL_CUDA_CHECK(
        cudaMemcpyAsync(dst, src, static_cast<size_t>(bytes), cudaMemcpyDefault, stream));
    OFL_CUDA_CHECK(cudaStreamSynchronize(stream));
    OFL_CUDA_CHECK(cudaStreamDestroy(stream));
  };
  memory.accumulate = [ordinal](void* dst, const void* init, const std::vector<const void*>& srcs,
                                int64_t n, DataType dtype) {
    CudaAccumulate(ordinal, dst, init, srcs, n, dtype);
  };
  return memory;
}

void CudaAccumulateOn(Stream* stream, void* dst, const void* src, int64_t n, DataType dtype) {
  if (n == 0) return;
  CudaDeviceGuard guard(CudaOrdinalOf(stream->device()));
  LaunchAccumulate(dst, nullptr, {src}, n, dtype, CudaStreamOf(stream));
}

void CudaCopyBox(Stream* stream, const Tensor& src, const std::vector<int64_t>& src_start,
                 Tensor* dst, const std::vector<int64_t>& dst_start, const Shape& box) {
  const BoxCopy b = LayoutBoxCopy(src, src_start, *dst, dst_start, box);
  if (box.NumElements() == 0) return;
  const int64_t es = SizeOf(src.dtype());
  CudaDeviceGuard guard(CudaOrdinalOf(stream->device()));
  cuda::StridedCopy(box.dims(), es, static_cast<const char*>(src.raw()) + b.src_offset * es,
                    b.src_strides, static_cast<char*>(dst->raw()) + b.dst_offset * es,
                    b.dst_strides, CudaStreamOf(stream));
}

}  // namespace ofl
