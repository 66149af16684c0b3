#include <cuda_bf16.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <mutex>
#include <utility>

#include "oneflow_lite/core/cuda/cuda_device_context.h"
#include "oneflow_lite/core/cuda/stream_caches.h"
#include "ops/cuda_device.cuh"
#include "ops/cuda_util.h"

namespace ofl::cuda {

namespace {

// cuBLASLt's recommended workspace for Hopper.
constexpr size_t kCublasLtWorkspaceBytes = size_t{32} << 20;

struct Handles {
  std::mutex mutex;
  std::map<int, cublasLtHandle_t> cublas_lt;
  std::map<std::pair<int, cudaStream_t>, void*> workspaces;
  std::map<std::pair<int, cudaStream_t>, cudnnHandle_t> cudnn;
};

// Process-lifetime cache (never destroyed: handles outlive static destructors).
Handles& TheHandles() {
  static Handles* handles = new Handles;
  return *handles;
}

// A dying stream's cuDNN handles and cuBLASLt workspaces (its work finished);
// how many there were.
int64_t ReleaseStreamEntries(cudaStream_t stream) {
  Handles& h = TheHandles();
  std::lock_guard<std::mutex> lock(h.mutex);
  const size_t before = h.workspaces.size() + h.cudnn.size();
  for (auto it = h.workspaces.begin(); it != h.workspaces.end();) {
    if (it->first.second != stream) {
      ++it;
      continue;
    }
    (void)cudaFree(it->second);
    it = h.workspaces.erase(it);
  }
  for (auto it = h.cudnn.begin(); it != h.cudnn.end();) {
    if (it->first.second != stream) {
      ++it;
      continue;
    }
    (void)cudnnDestroy(it->second);
    it = h.cudnn.erase(it);
  }
  return static_cast<int64_t>(before - h.workspaces.size() - h.cudnn.size());
}

[[maybe_unused]] const bool kStreamReleaseRegistered =
    RegisterCudaStreamRelease(&ReleaseStreamEntries);

template <typename T>
__global__ void FillKernel(int64_t n, T value, T* out) {
  OFL_KERNEL_LOOP(i, n) { out[i] = value; }
}

template <typename T>
void LaunchFill(Tensor& t, T value, cudaStream_t stream) {
  FillKernel<T>
      <<<BlocksFor(t.numel()), kThreads, 0, stream>>>(t.numel(), value, static_cast<T*>(t.raw()));
  OFL_CUDA_LAUNCH_CHECK();
}

}  // namespace

unsigned BlocksFor(int64_t n) {
  const int64_t blocks = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(std::clamp<int64_t>(blocks, 1, 65536));
}

DeviceGuard::DeviceGuard(int device) {
  const int ordinal = CudaOrdinalOf(Device{DeviceType::kCUDA, device});
  OFL_CUDA_CHECK(cudaGetDevice(&previous_));
  if (previous_ != ordinal) OFL_CUDA_CHECK(cudaSetDevice(ordinal));
}

DeviceGuard::~DeviceGuard() {
  int current = 0;
  if (cudaGetDevice(&current) == cudaSuccess && current != previous_) {
    (void)cudaSetDevice(previous_);
  }
}

cudaStream_t StreamOf(const KernelContext& k) {
  CHECK(k.device.type == DeviceType::kCUDA)
      << k.where() << ": a CUDA kernel was called for device " << k.device;
  return CudaStreamOf(k.stream);
}

StreamBuffer::StreamBuffer(size_t bytes, cudaStream_t stream) : stream_(stream) {
  if (bytes > 0) OFL_CUDA_CHECK(cudaMallocAsync(&data_, bytes, stream));
}

StreamBuffer::~StreamBuffer() {
  if (data_ != nullptr) OFL_CUDA_CHECK(cudaFreeAsync(data_, stream_));
}

cublasLtHandle_t CublasLtHandle(int device) {
  Handles& h = TheHandles();
  std::lock_guard<std::mutex> lock(h.mutex);
  auto it = h.cublas_lt.find(device);
  if (it != h.cublas_lt.end()) return it->second;
  DeviceGuard guard(device);
  cublasLtHandle_t handle = nullptr;
  OFL_CUBLAS_CHECK(cublasLtCreate(&handle));
  h.cublas_lt.emplace(device, handle);
  return handle;
}

void* CublasLtWorkspace(int device, cudaStream_t stream, size_t* bytes) {
  *bytes = kCublasLtWorkspaceBytes;
  Handles& h = TheHandles();
  std::lock_guard<std::mutex> lock(h.mutex);
  auto it = h.workspaces.find({device, stream});
  if (it != h.workspaces.end()) return it->second;
  DeviceGuard guard(device);
  void* workspace = nullptr;
  OFL_CUDA_CHECK(cudaMalloc(&workspace, kCublasLtWorkspaceBytes));
  h.workspaces.emplace(std::make_pair(device, stream), workspace);
  return workspace;
}

cudnnHandle_t CudnnHandle(int device, cudaStream_t stream) {
  Handles& h = TheHandles();
  std::lock_guard<std::mutex> lock(h.mutex);
  auto it = h.cudnn.find({device, stream});
  if (it != h.cudnn.end()) return it->second;
  DeviceGuard guard(device);
  cudnnHandle_t handle = nullptr;
  OFL_CUDNN_CHECK(cudnnCreate(&handle));
  OFL_CUDNN_CHECK(cudnnSetStream(handle, stream));
  h.cudnn.emplace(std::make_pair(device, stream), handle);
  return handle;
}

void Fill(Tensor& t, double value, cudaStream_t stream) {
  if (t.numel() == 0) return;
  if (value == 0.0 && !std::signbit(value)) {  // +0.0 is all-zero bytes in every dtype
    OFL_CUDA_CHECK(cudaMemsetAsync(t.raw(), 0, t.nbytes(), stream));
    return;
  }
  switch (t.dtype()) {
    case DataType::kFloat32:
      LaunchFill<float>(t, static_cast<float>(value), stream);
      break;
    case DataType::kFloat64:
      LaunchFill<double>(t, value, stream);
      break;
    case DataType::kInt32:
      LaunchFill<int32_t>(t, static_cast<int32_t>(value), stream);
      break;
    case DataType::kInt64:
      LaunchFill<int64_t>(t, static_cast<int64_t>(value), stream);
      break;
    case DataType::kBFloat16: {
      const __nv_bfloat16 v = __float2bfloat16(static_cast<float>(value));
      uint16_t bits = 0;
      static_assert(sizeof(v) == sizeof(bits));
      std::memcpy(&bits, &v, sizeof(bits));
      FillKernel<uint16_t><<<BlocksFor(t.numel()), kThreads, 0, stream>>>(
          t.numel(), bits, static_cast<uint16_t*>(t.raw()));
      OFL_CUDA_LAUNCH_CHECK();
      break;
    }
    default:
      ThrowNoKernelFor("float32/float64/bfloat16/int32/int64", t.dtype());
  }
}

}  // namespace ofl::cuda
