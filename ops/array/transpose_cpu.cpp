// CPU kernel of transpose, any dtype: one strided copy that reads x through
// its strides permuted (transpose_plan.h) and writes y contiguously
// (strided_copy.h).
#include "ops/array/strided_copy.h"
#include "ops/array/transpose_plan.h"
#include "ops/kernel.h"

namespace ofl {

namespace {

void TransposeKernel(KernelContext& k) {
  const Tensor& x = k.in(0);
  Tensor& y = k.out(0);
  StridedCopy(y.shape().dims(), SizeOf(x.dtype()), x.raw(), TransposeSourceStrides(k), y.raw(),
              ContiguousStrides(y.shape()));
}

OFL_REGISTER_KERNEL("transpose", DeviceType::kCPU, TransposeKernel);

}  // namespace
}  // namespace ofl
