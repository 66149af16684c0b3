// CPU kernels of slice and slice_grad, any dtype: one strided copy each
// (strided_copy.h). The ranges come from the local shape (slice_range.h),
// so a shard split on an untouched axis runs the same code.
#include <cstring>

#include "ops/array/slice_range.h"
#include "ops/array/strided_copy.h"
#include "ops/kernel.h"

namespace ofl {

namespace {

void SliceKernel(KernelContext& k) {
  const Tensor& x = k.in(0);
  Tensor& y = k.out(0);
  std::vector<AxisRange> ranges = SliceRanges(x.shape(), k.attr());
  CHECK(SlicedShape(ranges) == y.shape()) << k.op_name << ": y " << y.shape();
  SlicedBlockOf b = SlicedBlock(x.shape(), ranges);
  const int64_t size = SizeOf(x.dtype());
  StridedCopy(y.shape().dims(), size, static_cast<const char*>(x.raw()) + b.offset * size,
              b.strides, y.raw(), ContiguousStrides(y.shape()));
}

void SliceGradKernel(KernelContext& k) {
  const Tensor& dy = k.in(1);
  Tensor& dx = k.out(0);
  std::vector<AxisRange> ranges = SliceRanges(dx.shape(), k.attr());
  CHECK(SlicedShape(ranges) == dy.shape()) << k.op_name << ": dy " << dy.shape();
  if (dx.nbytes() > 0) std::memset(dx.raw(), 0, dx.nbytes());
  SlicedBlockOf b = SlicedBlock(dx.shape(), ranges);
  const int64_t size = SizeOf(dx.dtype());
  StridedCopy(dy.shape().dims(), size, dy.raw(), ContiguousStrides(dy.shape()),
              static_cast<char*>(dx.raw()) + b.offset * size, b.strides);
}

OFL_REGISTER_KERNEL("slice", DeviceType::kCPU, SliceKernel);
OFL_REGISTER_KERNEL("slice_grad", DeviceType::kCPU, SliceGradKernel);

}  // namespace
}  // namespace ofl
