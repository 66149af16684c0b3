// CUDA kernel of transpose, any dtype: one strided copy that reads x through
// its strides permuted (transpose_plan.h) and writes y contiguously, as
// transpose_cpu.cpp.
#include "ops/array/strided_copy.h"
#include "ops/array/transpose_plan.h"
#include "ops/cuda_util.h"

namespace ofl {

namespace {

void TransposeKernel(KernelContext& k) {
  cuda::DeviceGuard guard(k.device.index);
  const Tensor& x = k.in(0);
  Tensor& y = k.out(0);
  cuda::StridedCopy(y.shape().dims(), SizeOf(x.dtype()), x.raw(), TransposeSourceStrides(k),
                    y.raw(), ContiguousStrides(y.shape()), cuda::StreamOf(k));
}

OFL_REGISTER_KERNEL("transpose", DeviceType::kCUDA, TransposeKernel);

}  // namespace
}  // namespace ofl
