// OFL_SKIP_WITHOUT_CUDA(): the first line of a test that needs a GPU. Without
// one it skips with "no CUDA device" (CI), or fails when OFL_REQUIRE_CUDA=1
// (scripts/gpu_check.sh: a GPU check must not pass by skipping), as the CUDA
// kernel tests do (tests/cpp/cuda). Test-only.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "oneflow_lite/core/cuda/cuda_check.h"

namespace ofl {

inline bool CudaRequired() {
  const char* require = std::getenv("OFL_REQUIRE_CUDA");
  return require != nullptr && std::string(require) == "1";
}

}  // namespace ofl

#define OFL_SKIP_WITHOUT_CUDA()                                                           \
  do {                                                                                    \
    if (::ofl::CudaDeviceCount() > 0) break;                                              \
    if (::ofl::CudaRequired()) FAIL() << ::ofl::kNoCudaDevice << " (OFL_REQUIRE_CUDA=1)"; \
    GTEST_SKIP() << ::ofl::kNoCudaDevice;                                                 \
  } while (0)
