// The runtime's one door to device backends compiled outside runtime/ (the
// CUDA backend of oneflow_lite/core/cuda, when OFL_HAVE_CUDA): the device
// contexts a Runtime makes by default, the synchronous byte copies its host
// code needs on any device's memory (build-time slot zeroing, the undo
// copy, fetch clones, boxing's local steps), and the end of a step on a
// stream (its device-side user errors). Every other runtime file stays
// free of CUDA. Thread safety: every function from any thread.
#pragma once

#include <cstdint>
#include <memory>

#include "oneflow_lite/core/device_context.h"
#include "oneflow_lite/core/tensor.h"

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

}  // namespace ofl
