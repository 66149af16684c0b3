// ForEachConcatBlock: concat's output cut into one block per input along the
// axis, each handed to a copy routine as its destination address and the
// output's strides. Shared by the CPU and CUDA kernels (concat_cpu.cpp,
// concat_cuda.cu), which differ only in the strided copy they call. Host
// code, no CUDA types. Shapes are the local ones, so a shard split on
// another axis runs the same code.
#pragma once

#include <cstdint>
#include <vector>

#include "ops/array/strided_copy.h"
#include "ops/kernel.h"

namespace ofl {

// Calls copy(in, dst, dst_strides) for every input in order: dst is where
// `in`'s block of k.out(0) starts, dst_strides (in elements) are k.out(0)'s.
template <typename Copy>
void ForEachConcatBlock(KernelContext& k, Copy copy) {
  Tensor& out = k.out(0);
  const int64_t ndim = out.shape().ndim();
  const int64_t axis = NormalizeAxis(k.attr().Get<int64_t>("axis"), ndim, k.op_name).value();
  const std::vector<int64_t> strides = ContiguousStrides(out.shape());
  const int64_t size = SizeOf(out.dtype());
  int64_t offset = 0;
  for (const Tensor* in : k.inputs) {
    CHECK(in->dtype() == out.dtype() && in->shape().ndim() == ndim) << k.op_name;
    copy(*in, static_cast<char*>(out.raw()) + offset * strides[axis] * size, strides);
    offset += in->shape()[axis];
  }
  CHECK(offset == out.shape()[axis]) << k.op_name << ": out " << out.shape();
}

}  // namespace ofl
