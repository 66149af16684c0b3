// MatmulDims: the sizes of one matmul or batch_matmul call read from its
// local tensors, op(a) (m, k) times op(b) (k, n), `batch` times. Shared by
// the CPU and CUDA kernels (matmul_cpu.cpp, matmul_cuda.cu), which map it
// to oneDNN/OpenBLAS and cuBLASLt. Host code, no CUDA types; plain values.
#pragma once

#include <cstdint>

#include "ops/kernel.h"

namespace ofl {

struct MatmulDims {
  int64_t batch = 0;  // 0: plain 2-D matmul
  int64_t m = 0, n = 0, k = 0;
  bool ta = false, tb = false;  // the attrs transpose_a and transpose_b
};

// From kc.in(0) (a) and kc.in(1) (b); shapes were checked by the op's inference.
inline MatmulDims MatmulDimsOf(const KernelContext& kc, bool batched) {
  const Shape& a = kc.in(0).shape();
  const Shape& b = kc.in(1).shape();
  MatmulDims d;
  d.ta = kc.attr().Get<bool>("transpose_a");
  d.tb = kc.attr().Get<bool>("transpose_b");
  const int64_t ra = a.ndim() - 2, rb = b.ndim() - 2;
  d.batch = batched ? a.Count(0, ra) : 0;
  d.m = d.ta ? a[ra + 1] : a[ra];
  d.k = d.ta ? a[ra] : a[ra + 1];
  d.n = d.tb ? b[rb] : b[rb + 1];
  CHECK_EQ(d.k, d.tb ? b[rb + 1] : b[rb]) << kc.op_type << ": contraction sizes differ";
  return d;
}

}  // namespace ofl
