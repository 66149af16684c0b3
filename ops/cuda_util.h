// Host-side helpers the CUDA kernels (ops/**/*_cuda.cu) share: error checks
// for cuBLAS(Lt) and cuDNN, the current-device guard, the stream of a kernel
// call, launch sizes, stream-ordered scratch memory, the library handles
// cached per device and stream, and the fill that the array ops use beside
// core's by-bytes strided copy (cuda::StridedCopy, core/cuda/device_kernels.h).
//
// All functions here are thread-safe.
#pragma once

#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "oneflow_lite/core/cuda/cuda_check.h"
#include "oneflow_lite/core/cuda/cuda_stream.h"
#include "oneflow_lite/core/cuda/device_kernels.h"
#include "ops/kernel.h"

#define OFL_CUBLAS_CHECK(expr)                                           \
  do {                                                                   \
    const cublasStatus_t ofl_cublas_status_ = (expr);                    \
    CHECK_EQ(ofl_cublas_status_, CUBLAS_STATUS_SUCCESS)                  \
        << #expr << ": " << cublasLtGetStatusString(ofl_cublas_status_); \
  } while (0)

#define OFL_CUDNN_CHECK(expr)                                       \
  do {                                                              \
    const cudnnStatus_t ofl_cudnn_status_ = (expr);                 \
    CHECK_EQ(ofl_cudnn_status_, CUDNN_STATUS_SUCCESS)               \
        << #expr << ": " << cudnnGetErrorString(ofl_cudnn_status_); \
  } while (0)

// After a <<<...>>> launch: a bad configuration is a bug (CHECK).
#define OFL_CUDA_LAUNCH_CHECK() OFL_CUDA_CHECK(cudaGetLastError())

// Runs `body` with `T` bound to the device type of a float32, float64 or
// bfloat16 `dtype` (kernels compute bfloat16 in float: cuda_device.cuh).
#define OFL_CUDA_DISPATCH_FLOAT(dtype, T, ...)                      \
  do {                                                              \
    switch (dtype) {                                                \
      case ::ofl::DataType::kFloat32: {                             \
        using T = float;                                            \
        __VA_ARGS__;                                                \
        break;                                                      \
      }                                                             \
      case ::ofl::DataType::kFloat64: {                             \
        using T = double;                                           \
        __VA_ARGS__;                                                \
        break;                                                      \
      }                                                             \
      case ::ofl::DataType::kBFloat16: {                            \
        using T = __nv_bfloat16;                                    \
        __VA_ARGS__;                                                \
        break;                                                      \
      }                                                             \
      default:                                                      \
        ::ofl::ThrowNoKernelFor("float32/float64/bfloat16", dtype); \
    }                                                               \
  } while (0)

// Runs `body` with `T` bound to the device type of a float32, float64,
// int32, int64 or bool `dtype` (the kernels that compare, select or move).
#define OFL_CUDA_DISPATCH_VALUE(dtype, T, ...)                              \
  do {                                                                      \
    switch (dtype) {                                                        \
      case ::ofl::DataType::kFloat32: {                                     \
        using T = float;                                                    \
        __VA_ARGS__;                                                        \
        break;                                                              \
      }                                                                     \
      case ::ofl::DataType::kFloat64: {                                     \
        using T = double;                                                   \
        __VA_ARGS__;                                                        \
        break;                                                              \
      }                                                                     \
      case ::ofl::DataType::kInt32: {                                       \
        using T = int32_t;                                                  \
        __VA_ARGS__;                                                        \
        break;                                                              \
      }                                                                     \
      case ::ofl::DataType::kInt64: {                                       \
        using T = int64_t;                                                  \
        __VA_ARGS__;                                                        \
        break;                                                              \
      }                                                                     \
      case ::ofl::DataType::kBool: {                                        \
        using T = bool;                                                     \
        __VA_ARGS__;                                                        \
        break;                                                              \
      }                                                                     \
      default:                                                              \
        ::ofl::ThrowNoKernelFor("float32/float64/int32/int64/bool", dtype); \
    }                                                                       \
  } while (0)

// Handles: one cuBLASLt handle per device (cuBLASLt handles may be shared by
// threads); one cuDNN handle and one cuBLASLt workspace per (device, stream),
// since a stream is driven by one thread at a time (core/stream.h). They are
// created on first use and live for the process. Included only by CUDA sources
// (OFL_HAVE_CUDA builds).

namespace ofl::cuda {

template <typename T>
struct DataTypeOfDevice;
template <>
struct DataTypeOfDevice<float> {
  static constexpr DataType value = DataType::kFloat32;
};
template <>
struct DataTypeOfDevice<double> {
  static constexpr DataType value = DataType::kFloat64;
};
template <>
struct DataTypeOfDevice<__nv_bfloat16> {
  static constexpr DataType value = DataType::kBFloat16;
};
template <>
struct DataTypeOfDevice<int32_t> {
  static constexpr DataType value = DataType::kInt32;
};
template <>
struct DataTypeOfDevice<int64_t> {
  static constexpr DataType value = DataType::kInt64;
};
template <>
struct DataTypeOfDevice<bool> {
  static constexpr DataType value = DataType::kBool;
};

// Tensor::data<T> for the device element types (bfloat16 included).
template <typename T>
T* Data(Tensor& t) {
  CHECK(t.dtype() == DataTypeOfDevice<T>::value) << "Tensor holds " << DataTypeName(t.dtype());
  return static_cast<T*>(t.raw());
}
template <typename T>
const T* Data(const Tensor& t) {
  CHECK(t.dtype() == DataTypeOfDevice<T>::value) << "Tensor holds " << DataTypeName(t.dtype());
  return static_cast<const T*>(t.raw());
}

// Threads per block of the elementwise and reduction kernels.
constexpr int kThreads = 256;

// Blocks for a grid-stride loop over n elements (at least 1, at most 65536:
// the loop covers the rest).
unsigned BlocksFor(int64_t n);

// Makes `device` current for the guard's lifetime; restores the previous one.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = 0;
};

// The cudaStream_t of a kernel call (its stream must be a CudaStream, CHECK).
cudaStream_t StreamOf(const KernelContext& k);

// Device memory for the duration of one kernel call, ordered on `stream`
// (cudaMallocAsync; freed with cudaFreeAsync after the work enqueued before
// the destructor). A zero size holds nullptr.
class StreamBuffer {
 public:
  StreamBuffer(size_t bytes, cudaStream_t stream);
  ~StreamBuffer();
  StreamBuffer(const StreamBuffer&) = delete;
  StreamBuffer& operator=(const StreamBuffer&) = delete;
  void* get() const { return data_; }
  template <typename T>
  T* as() const {
    return static_cast<T*>(data_);
  }

 private:
  void* data_ = nullptr;
  cudaStream_t stream_;
};

cublasLtHandle_t CublasLtHandle(int device);
// The cuBLASLt workspace of (device, stream) and its size.
void* CublasLtWorkspace(int device, cudaStream_t stream, size_t* bytes);
// The cuDNN handle of (device, stream), already set to `stream`.
cudnnHandle_t CudnnHandle(int device, cudaStream_t stream);

// Every element of `t` (device memory; float32/64, bfloat16, int32/64) = value.
void Fill(Tensor& t, double value, cudaStream_t stream);

}  // namespace ofl::cuda
