// CUDA kernel of concat, any dtype: each input is one strided copy into its
// block of the output (cuda::StridedCopy), as concat_cpu.cpp.
#include "ops/array/strided_copy.h"
#include "ops/cuda_util.h"

namespace ofl {

namespace {

void ConcatKernel(KernelContext& k) {
  cuda::DeviceGuard guard(k.device.index);
  const cudaStream_t stream = cuda::StreamOf(k);
  Tensor& out = k.out(0);
  const int64_t ndim = out.shape().ndim();
  const int64_t axis = NormalizeAxis(k.attr().Get<int64_t>("axis"), ndim, k.op_name).value();
  const std::vector<int64_t> strides = ContiguousStrides(out.shape());
  const int64_t size = SizeOf(out.dtype());
  int64_t offset = 0;
  for (const Tensor* in : k.inputs) {
    CHECK(in->dtype() == out.dtype() && in->shape().ndim() == ndim) << k.op_name;
    char* dst = static_cast<char*>(out.raw()) + offset * strides[axis] * size;
    cuda::StridedCopy(in->shape().dims(), size, in->raw(), ContiguousStrides(in->shape()), dst,
                      strides, stream);
    offset += in->shape()[axis];
  }
  CHECK(offset == out.shape()[axis]) << k.op_name << ": out " << out.shape();
}

OFL_REGISTER_KERNEL("concat", DeviceType::kCUDA, ConcatKernel);

}  // namespace
}  // namespace ofl
