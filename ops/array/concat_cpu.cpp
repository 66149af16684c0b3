// CPU kernel of concat, any dtype: each input is one strided copy into its
// block of the output (strided_copy.h). Shapes are the local ones, so a
// shard split on another axis runs the same code.
#include "ops/array/strided_copy.h"
#include "ops/kernel.h"

namespace ofl {

namespace {

void ConcatKernel(KernelContext& k) {
  Tensor& out = k.out(0);
  const int64_t ndim = out.shape().ndim();
  const int64_t axis = NormalizeAxis(k.attr().Get<int64_t>("axis"), ndim, k.op_name).value();
  const std::vector<int64_t> strides = ContiguousStrides(out.shape());
  const int64_t size = SizeOf(out.dtype());
  int64_t offset = 0;
  for (const Tensor* in : k.inputs) {
    CHECK(in->dtype() == out.dtype() && in->shape().ndim() == ndim) << k.op_name;
    char* dst = static_cast<char*>(out.raw()) + offset * strides[axis] * size;
    StridedCopy(in->shape().dims(), size, in->raw(), ContiguousStrides(in->shape()), dst, strides);
    offset += in->shape()[axis];
  }
  CHECK(offset == out.shape()[axis]) << k.op_name << ": out " << out.shape();
}

OFL_REGISTER_KERNEL("concat", DeviceType::kCPU, ConcatKernel);

}  // namespace
}  // namespace ofl
