// LogitRows: the logits of sparse_softmax_cross_entropy and its backward op
// seen as `rows` rows of `classes` classes (the last axis). Shared by the
// CPU and CUDA kernels (cross_entropy_cpu.cpp, cross_entropy_cuda.cu). Host
// code, no CUDA types; plain values.
#pragma once

#include <cstdint>

#include "oneflow_lite/core/tensor.h"

namespace ofl {

struct LogitRows {
  int64_t rows = 0, classes = 0;
};

// The op's inference asks for at least one class; no classes means no rows.
inline LogitRows LogitRowsOf(const Tensor& logits) {
  const int64_t classes = logits.shape()[logits.shape().ndim() - 1];
  return {classes == 0 ? 0 : logits.numel() / classes, classes};
}

}  // namespace ofl
