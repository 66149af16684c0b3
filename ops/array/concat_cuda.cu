// CUDA kernel of concat, any dtype: each input is one strided copy into its
// block of the output (concat_plan.h, cuda::StridedCopy), as concat_cpu.cpp.
#include "ops/array/concat_plan.h"
#include "ops/array/strided_copy.h"
#include "ops/cuda_util.h"

namespace ofl {

namespace {

void ConcatKernel(KernelContext& k) {
  cuda::DeviceGuard guard(k.device.index);
  const cudaStream_t stream = cuda::StreamOf(k);
  const int64_t size = SizeOf(k.out(0).dtype());
  ForEachConcatBlock(k, [&](const Tensor& in, void* dst, const std::vector<int64_t>& strides) {
    cuda::StridedCopy(in.shape().dims(), size, in.raw(), ContiguousStrides(in.shape()), dst,
                      strides, stream);
  });
}

OFL_REGISTER_KERNEL("concat", DeviceType::kCUDA, ConcatKernel);

}  // namespace
}  // namespace ofl
