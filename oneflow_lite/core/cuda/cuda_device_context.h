// The CUDA implementation of the device seam: CudaDeviceStream (a
// cudaStream_t behind the CudaStream interface of cuda_stream.h), CudaEvent
// (a cudaEvent_t), CudaAllocator (the CachingAllocator of
// core/caching_allocator.h over cudaMalloc/cudaFree) and CudaDeviceContext,
// whose byte work is cudaMemcpy/cudaMemset and the kernels of
// device_kernels.h. cuda_device_context.cpp registers the CUDA backend
// (core/device_backend.h) during static initialisation.
//
// Thread safety as in stream.h and allocator.h.
#pragma once

#include <cuda_runtime_api.h>

#include <memory>
#include <mutex>
#include <vector>

#include "oneflow_lite/core/caching_allocator.h"
#include "oneflow_lite/core/cuda/cuda_stream.h"
#include "oneflow_lite/core/device_backend.h"
#include "oneflow_lite/core/device_context.h"

// Devices: "cuda:N" runs on physical GPU N % CudaDeviceCount(), so N virtual
// devices share one GPU in one process (the in-process CUDA communicator's
// tests) and one process per GPU sees its rank's GPU when every host has the
// same count. Every call that creates or uses a CUDA object first makes its
// GPU current on the calling thread (CudaDeviceGuard restores the previous).
// Streams are non-blocking (they never wait for the legacy default stream).
//
// Ownership: a context owns its allocator (shared with the buffers it handed
// out); streams and events belong to their caller and must not outlive the
// context. A stream's destructor synchronises it.

namespace ofl {

// Makes `ordinal` the calling thread's current GPU until it goes.
class CudaDeviceGuard {
 public:
  explicit CudaDeviceGuard(int ordinal);
  ~CudaDeviceGuard();
  CudaDeviceGuard(const CudaDeviceGuard&) = delete;
  CudaDeviceGuard& operator=(const CudaDeviceGuard&) = delete;

 private:
  int previous_ = 0;
  bool changed_ = false;
};

class CudaEvent final : public Event {
 public:
  explicit CudaEvent(int ordinal);
  ~CudaEvent() override;
  void Record(Stream* stream) override;
  bool Query() const override;
  void Synchronize() const override;
  cudaEvent_t handle() const { return event_; }

 private:
  const int ordinal_;
  cudaEvent_t event_ = nullptr;
};

class CudaDeviceStream final : public CudaStream {
 public:
  CudaDeviceStream(Device device, int ordinal);
  ~CudaDeviceStream() override;
  const Device& device() const override { return device_; }
  bool is_inline() const override { return false; }
  void BindToThread() override;
  void Enqueue(std::function<void()> work) override;
  void Wait(const Event& event) override;
  void Synchronize() override;

  cudaStream_t handle() const override { return stream_; }
  CudaDeviceError* device_error() override { return device_error_; }
  int32_t NoteDeviceCheck(std::function<Status(int64_t, int64_t)> report) override;
  Status TakeDeviceError() override;

 private:
  void ResetDeviceError();

  const Device device_;
  const int ordinal_;
  cudaStream_t stream_ = nullptr;
  CudaDeviceError* device_error_ = nullptr;  // device memory
  std::vector<std::function<Status(int64_t, int64_t)>> notes_;
};

// The caching allocator of one GPU. Request sizes are rounded to bins of 512
// bytes or more, so every pointer is aligned to 256 (cudaMalloc's).
class CudaAllocator final : public CachingAllocator {
 public:
  static std::shared_ptr<CudaAllocator> Create(Device device, int ordinal);
  CudaAllocator(Device device, int ordinal);
  int ordinal() const { return ordinal_; }

 private:
  const int ordinal_;
};

class CudaDeviceContext final : public DeviceContext {
 public:
  CudaDeviceContext(Device device, int ordinal);
  const Device& device() const override { return device_; }
  Allocator* allocator() override { return allocator_.get(); }
  std::unique_ptr<Stream> CreateStream() override;
  std::unique_ptr<Event> CreateEvent() override;
  void Copy(Stream* stream, void* destination, const void* source, int64_t bytes) override;
  void Fill(Stream* stream, void* destination, int value, int64_t bytes) override;
  // On the legacy default stream, waited for (cudaMemcpy may return before a
  // device-to-device copy ends).
  void CopySync(void* destination, const void* source, int64_t bytes) override;
  void FillSync(void* destination, int value, int64_t bytes) override;
  // CudaStream::TakeDeviceError.
  Status Finish(Stream* stream) override;
  // Enqueued on `stream` (a CudaStream), not waited for.
  void CopyBox(Stream* stream, const Tensor& src, const std::vector<int64_t>& src_start,
               Tensor* dst, const std::vector<int64_t>& dst_start, const Shape& box) override;
  void Accumulate(Stream* stream, void* dst, const void* src, int64_t n, DataType dtype) override;
  void ScaleByInverse(Stream* stream, void* data, int64_t n, DataType dtype, int64_t k) override;
  int ordinal() const { return ordinal_; }
  CudaAllocator* cuda_allocator() { return allocator_.get(); }

 private:
  const Device device_;
  const int ordinal_;
  std::shared_ptr<CudaAllocator> allocator_;
};

// The physical GPU of "cuda:N" in this process: N % CudaDeviceCount() (CHECK:
// a device exists).
int CudaOrdinalOf(const Device& device);

// The context of "cuda:N": an error naming the device when this process sees
// no GPU ("cuda:0: no CUDA device").
Maybe<std::unique_ptr<DeviceContext>> CreateCudaDeviceContext(const Device& device);

// The memory of an in-process group of CUDA devices (core/device_backend.h):
// N virtual devices on one GPU copy (cudaMemcpyAsync, any direction) and sum
// (device_kernels.h) on a stream of their own per call, waited for. Every
// member must be on one GPU (an error names the devices otherwise); an error
// when this process sees no GPU.
Maybe<GroupMemory> CudaGroupMemory(const std::vector<Device>& devices);

}  // namespace ofl
