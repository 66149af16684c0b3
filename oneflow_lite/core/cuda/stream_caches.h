// Per-stream caches kept outside core (ops/cuda_util.h: a cuDNN handle and a
// cuBLASLt workspace per stream) register, during static initialisation, a
// function that releases what they hold for one cudaStream_t. A
// CudaDeviceStream (cuda_device_context.h) calls every one of them after it
// synchronised and before it destroys its cudaStream_t, so nothing outlives
// its stream and a later stream that gets the same handle value starts
// clean. This is the file's one registry: filled before main, read after
// (thread-safe). Register returns true, for a namespace-scope initialiser; a
// release function and ReleaseCudaStreamCaches return the entries released.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace ofl {

using CudaStreamReleaseFn = int64_t (*)(cudaStream_t stream);
bool RegisterCudaStreamRelease(CudaStreamReleaseFn release);
int64_t ReleaseCudaStreamCaches(cudaStream_t stream);

}  // namespace ofl
