// The runtime's one door to device backends compiled outside runtime/ (the
// CUDA backend of oneflow_lite/core/cuda, when OFL_HAVE_CUDA): the device
// contexts a Runtime makes by default, the synchronous byte copies its host
// code needs on any device's memory (build-time slot zeroing, the undo
// copy, fetch clones), the end of a step on a stream (its device-side user
// errors), and boxing's device work and communicators (packing and sums on a
// stream, in-process group memory, NCCL). Every other runtime file stays
// free of CUDA. Thread safety: every function from any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "oneflow_lite/core/device_context.h"
#include "oneflow_lite/core/tensor.h"
#include "runtime/inprocess_communicator.h"
#include "runtime/tcp_store.h"

namespace ofl {

// CPU: CreateDeviceContext; CUDA: the CUDA backend's context, or an error
// naming the device ("cuda:0: no CUDA device", "cuda:0: this build has no
// cuda backend").
Maybe<std::unique_ptr<DeviceContext>> MakeDeviceContext(const Device& device);

// Copies `bytes` between memory of `device` and/or the host, or fills them,
// and returns when done (memcpy/memset on the host; cudaMemcpy/cudaMemset).
void CopyBytesSync(const Device& device, void* destination, const void* source, int64_t bytes);
void FillBytesSync(const Device& device, void* destination, int value, int64_t bytes);

// A host tensor holding a copy of `tensor` (any device).
Tensor CloneToHost(const Tensor& tensor);

// CUDA devices this process sees; 0 in a build without the CUDA backend.
int CudaDevicesVisible();

// Waits for `stream`'s work and returns the first device-side user error its
// kernels recorded since the last call (a CUDA stream), else OK.
Status FinishStream(Stream* stream);

// Boxing's byte work (runtime/boxing.cpp) on the memory of `stream`'s device:
// a CUDA stream enqueues it (a strided device copy; a sum kernel), a host
// stream runs it at once on the calling thread (ops/array/strided_copy.h's
// CopyBox; runtime/reduce_sum.h). CopyBoxOn copies the box `box` at
// `src_start` of `src` to `dst_start` of `*dst` (both contiguous, one dtype);
// AccumulateOn adds n elements of `src` into `dst`.
void CopyBoxOn(Stream* stream, const Tensor& src, const std::vector<int64_t>& src_start,
               Tensor* dst, const std::vector<int64_t>& dst_start, const Shape& box);
void AccumulateOn(Stream* stream, void* dst, const void* src, int64_t n, DataType dtype);

// The memory of an in-process boxing group whose members are `devices` of one
// device type: HostMemory() for CPU; for CUDA the device copies and sum kernel
// of runtime/cuda_memory.h, which needs every member on one GPU (an error
// names the devices otherwise, and a build without the CUDA backend says so).
Maybe<InProcessMemory> DeviceGroupMemory(const std::vector<Device>& devices);

// The communicator of world rank `world_rank` in a group of processes on
// `device` (not a CPU device: those use Gloo): NCCL for CUDA
// (runtime/nccl_communicator.h, the id through `store`, each call bounded by
// `timeout`); an error in a build without the CUDA backend.
Maybe<std::unique_ptr<Communicator>> MakeDeviceCommunicator(
    TcpStore* store, const std::string& group, const std::vector<int64_t>& members,
    int64_t world_rank, const Device& device, std::chrono::milliseconds timeout);

}  // namespace ofl
