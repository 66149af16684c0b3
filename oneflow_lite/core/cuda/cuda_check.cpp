#include "oneflow_lite/core/cuda/cuda_check.h"

namespace ofl {

int CudaDeviceCount() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();  // clear "no driver" so later calls see a clean state
    return 0;
  }
  return count;
}

}  // namespace ofl
