// CPU kernel of transpose, any dtype: one strided copy that reads x through
// its strides permuted and writes y contiguously (strided_copy.h).
#include "ops/array/permutation.h"
#include "ops/array/strided_copy.h"
#include "ops/kernel.h"

namespace ofl {

namespace {

void TransposeKernel(KernelContext& k) {
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
  StridedCopy(y.shape().dims(), SizeOf(x.dtype()), x.raw(), src_strides, y.raw(),
              ContiguousStrides(y.shape()));
}

OFL_REGISTER_KERNEL("transpose", DeviceType::kCPU, TransposeKernel);

}  // namespace
}  // namespace ofl
