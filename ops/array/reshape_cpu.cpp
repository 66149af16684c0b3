// CPU kernel of reshape and flatten: the output holds the input's bytes in
// the same order, so one memcpy serves every dtype and every shard; nothing
// to copy when the runtime's memory plan made the output a view of the input
// (runtime/memory_plan.h).
#include <cstring>

#include "ops/kernel.h"

namespace ofl {

namespace {

void CopyBytesKernel(KernelContext& k) {
  const Tensor& x = k.in(0);
  Tensor& y = k.out(0);
  CHECK(x.numel() == y.numel() && x.dtype() == y.dtype())
      << k.op_name << ": " << x.shape() << " -> " << y.shape();
  if (y.nbytes() > 0 && y.raw() != x.raw()) std::memcpy(y.raw(), x.raw(), y.nbytes());
}

OFL_REGISTER_KERNEL("reshape", DeviceType::kCPU, CopyBytesKernel);
OFL_REGISTER_KERNEL("flatten", DeviceType::kCPU, CopyBytesKernel);

}  // namespace
}  // namespace ofl
