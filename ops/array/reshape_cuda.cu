// CUDA kernel of reshape and flatten: one device-to-device copy of the bytes
// on the kernel's stream, as reshape_cpu.cpp's memcpy.
#include "ops/cuda_util.h"

namespace ofl {

namespace {

void CopyBytesKernel(KernelContext& k) {
  cuda::DeviceGuard guard(k.device.index);
  const Tensor& x = k.in(0);
  Tensor& y = k.out(0);
  CHECK(x.numel() == y.numel() && x.dtype() == y.dtype())
      << k.op_name << ": " << x.shape() << " -> " << y.shape();
  if (y.nbytes() == 0 || y.raw() == x.raw()) return;
  OFL_CUDA_CHECK(
      cudaMemcpyAsync(y.raw(), x.raw(), y.nbytes(), cudaMemcpyDeviceToDevice, cuda::StreamOf(k)));
}

OFL_REGISTER_KERNEL("reshape", DeviceType::kCUDA, CopyBytesKernel);
OFL_REGISTER_KERNEL("flatten", DeviceType::kCUDA, CopyBytesKernel);

}  // namespace
}  // namespace ofl
