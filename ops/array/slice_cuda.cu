// CUDA kernels of slice and slice_grad, any dtype: one strided copy each
// (cuda::StridedCopy); slice_grad zeroes dx first. As slice_cpu.cpp.
#include "ops/array/slice_range.h"
#include "ops/array/strided_copy.h"
#include "ops/cuda_util.h"

namespace ofl {

namespace {

void SliceKernel(KernelContext& k) {
  cuda::DeviceGuard guard(k.device.index);
  const Tensor& x = k.in(0);
  Tensor& y = k.out(0);
  std::vector<AxisRange> ranges = SliceRanges(x.shape(), k.attr());
  CHECK(SlicedShape(ranges) == y.shape()) << k.op_name << ": y " << y.shape();
  const SlicedBlockOf b = SlicedBlock(x.shape(), ranges);
  const int64_t size = SizeOf(x.dtype());
  cuda::StridedCopy(y.shape().dims(), size, static_cast<const char*>(x.raw()) + b.offset * size,
                    b.strides, y.raw(), ContiguousStrides(y.shape()), cuda::StreamOf(k));
}

void SliceGradKernel(KernelContext& k) {
  cuda::DeviceGuard guard(k.device.index);
  const cudaStream_t stream = cuda::StreamOf(k);
  const Tensor& dy = k.in(1);
  Tensor& dx = k.out(0);
  std::vector<AxisRange> ranges = SliceRanges(dx.shape(), k.attr());
  CHECK(SlicedShape(ranges) == dy.shape()) << k.op_name << ": dy " << dy.shape();
  if (dx.nbytes() > 0) OFL_CUDA_CHECK(cudaMemsetAsync(dx.raw(), 0, dx.nbytes(), stream));
  const SlicedBlockOf b = SlicedBlock(dx.shape(), ranges);
  const int64_t size = SizeOf(dx.dtype());
  cuda::StridedCopy(dy.shape().dims(), size, dy.raw(), ContiguousStrides(dy.shape()),
                    static_cast<char*>(dx.raw()) + b.offset * size, b.strides, stream);
}

OFL_REGISTER_KERNEL("slice", DeviceType::kCUDA, SliceKernel);
OFL_REGISTER_KERNEL("slice_grad", DeviceType::kCUDA, SliceGradKernel);

}  // namespace
}  // namespace ofl
