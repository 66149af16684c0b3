// CUDA error checks and device discovery shared by the CUDA backend (this
// folder), the CUDA kernels (ops/**/*_cuda.cu) and the CUDA tests.
//
// OFL_CUDA_CHECK / OFL_CUBLAS_CHECK / OFL_CUDNN_CHECK / OFL_NCCL_CHECK are
// internal-invariant checks (glog CHECK): a failing CUDA call that a user's
// input cannot cause aborts with the call and the library's message. Errors a
// user can cause (out of memory, an id out of range in a kernel) are reported
// as a Status by the code that can see them, never through these macros.
//
// Thread safety: everything here may be called from any thread.
#pragma once

#include <cuda_runtime_api.h>
#include <glog/logging.h>

#define OFL_CUDA_CHECK(expr)                                      \
  do {                                                            \
    const cudaError_t ofl_cuda_status_ = (expr);                  \
    CHECK_EQ(ofl_cuda_status_, cudaSuccess)                       \
        << #expr << ": " << cudaGetErrorString(ofl_cuda_status_); \
  } while (0)

// CudaDeviceCount() is 0 when there is no driver or no device (never an error),
// so a test or a caller can skip with "no CUDA device".

namespace ofl {

// The number of CUDA devices this process can use; 0 without a driver.
int CudaDeviceCount();

// The message a CUDA test skips with (GTEST_SKIP() << kNoCudaDevice).
inline constexpr const char* kNoCudaDevice = "no CUDA device";

}  // namespace ofl
