// OFL_HOST_DEVICE marks an inline function that CPU kernels (.cpp) and CUDA
// kernels (.cu, on the device) both call, so that one definition holds the
// logic both must agree on: `__host__ __device__` under nvcc, nothing for
// the host compiler. Such a function uses no std:: call that the device
// lacks (std::min, std::isnan): write the comparison out.
#pragma once

#if defined(__CUDACC__)
#define OFL_HOST_DEVICE __host__ __device__
#else
#define OFL_HOST_DEVICE
#endif
