// TransposeSourceStrides: the strides through which transpose's one strided
// copy reads x, so that it writes y contiguously: y's axis i steps through
// x's axis perm[i]. Shared by the CPU and CUDA kernels (transpose_cpu.cpp,
// transpose_cuda.cu), which differ only in the copy they call. Host code,
// no CUDA types; a pure function of the kernel's shapes and attrs.
#pragma once

#include <cstdint>
#include <vector>

#include "ops/array/permutation.h"
#include "ops/array/strided_copy.h"
#include "ops/kernel.h"

namespace ofl {

// x = k.in(0), y = k.out(0); the perm attr was validated by the op's inference.
inline std::vector<int64_t> TransposeSourceStrides(KernelContext& k) {
  const Tensor& x = k.in(0);
  const Tensor& y = k.out(0);
  const std::vector<int64_t> perm =
      NormalizePermutation(k.attr().Get<std::vector<int64_t>>("perm"), x.shape().ndim(), k.op_name)
          .value();
  const std::vector<int64_t> x_strides = ContiguousStrides(x.shape());
  std::vector<int64_t> src_strides;
  for (size_t i = 0; i < perm.size(); ++i) {
    CHECK(y.shape()[i] == x.shape()[perm[i]]) << k.op_name << ": y " << y.shape();
    src_strides.push_back(x_strides[perm[i]]);
  }
  return src_strides;
}

}  // namespace ofl
