// CUDA kernel of transpose, any dtype: one strided copy that reads x through
// its strides permuted and writes y contiguously, as transpose_cpu.cpp.
#include "ops/array/permutation.h"
#include "ops/array/strided_copy.h"
#include "ops/cuda_util.h"

namespace ofl {

namespace {

void TransposeKernel(KernelContext& k) {
  cuda::DeviceGuard guard(k.device.index);
  const Tensor& x = k.in(0);
  Tensor& y = k.out(0);
  std::vector<int64_t> perm =
      NormalizePermutation(k.attr().Get<std::vector<int64_t>>("perm"), x.shape().ndim(), k.op_name)
          .value();
  const std::vector<int64_t> x_strides = ContiguousStrides(x.shape());
  std::vector<int64_t> src_strides;
  for (size_t i = 0; i < perm.size(); ++i) {
    CHECK(y.shape()[i] == x.shape()[perm[i]]) << k.op_name << ": y " << y.shape();
    src_strides.push_back(x_strides[perm[i]]);
  }
  cuda::StridedCopy(y.shape().dims(), SizeOf(x.dtype()), x.raw(), src_strides, y.raw(),
                    ContiguousStrides(y.shape()), cuda::StreamOf(k));
}

OFL_REGISTER_KERNEL("transpose", DeviceType::kCUDA, TransposeKernel);

}  // namespace
}  // namespace ofl
