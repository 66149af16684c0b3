// Every registered op has a CUDA kernel (no device needed: the registry
// alone), and the CUDA kernels register for ops that exist.
#include <gtest/gtest.h>

#include "ops/kernel.h"
#include "ops/op_registry.h"

namespace ofl {
namespace {

TEST(CudaKernelRegistry, EveryRegisteredOpHasACudaKernel) {
  const std::vector<std::string> ops = OpRegistry::ListOps();
  ASSERT_GE(ops.size(), 52u);
  for (const std::string& op : ops) {
    EXPECT_TRUE(KernelRegistry::Find(op, DeviceType::kCUDA).ok()) << op << " has no CUDA kernel";
    EXPECT_TRUE(KernelRegistry::Find(op, DeviceType::kCPU).ok()) << op << " has no CPU twin";
  }
}

}  // namespace
}  // namespace ofl
