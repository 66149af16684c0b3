// CPU kernel of concat, any dtype: each input is one strided copy into its
// block of the output (concat_plan.h, strided_copy.h).
#include "ops/array/concat_plan.h"
#include "ops/array/strided_copy.h"
#include "ops/kernel.h"

namespace ofl {

namespace {

void ConcatKernel(KernelContext& k) {
  const int64_t size = SizeOf(k.out(0).dtype());
  ForEachConcatBlock(k, [&](const Tensor& in, void* dst, const std::vector<int64_t>& strides) {
    StridedCopy(in.shape().dims(), size, in.raw(), ContiguousStrides(in.shape()), dst, strides);
  });
}

OFL_REGISTER_KERNEL("concat", DeviceType::kCPU, ConcatKernel);

}  // namespace
}  // namespace ofl
