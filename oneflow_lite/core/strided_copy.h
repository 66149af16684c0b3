// StridedCopy: copies an N-d block of elements between two strided layouts,
// by bytes, so one routine serves every dtype. transpose, slice, slice_grad
// and concat are each one call of it, and so is the host's box copy of
// boxing (DeviceContext::CopyBox, device_context.h). Pure functions of their
// arguments; thread-safe (they run in parallel chunks on ParallelFor).
#pragma once

#include <cstdint>
#include <vector>

#include "oneflow_lite/core/shape.h"
#include "oneflow_lite/core/tensor.h"

namespace ofl {

// Strides (in elements) of a contiguous row-major tensor of `shape`.
std::vector<int64_t> ContiguousStrides(const Shape& shape);

// For every index i of `extent`: dst[sum i*dst_strides] = src[sum i*src_strides],
// each element `element_size` bytes; strides are in elements.
void StridedCopy(const std::vector<int64_t>& extent, int64_t element_size, const void* src,
                 const std::vector<int64_t>& src_strides, void* dst,
                 const std::vector<int64_t>& dst_strides);

// The strided copy that moves the box of extent `box` from `src_start` in
// `src` to `dst_start` in `dst` (same dtype, both contiguous row-major; a
// non-empty box must lie inside both, CHECKed): where the box starts in each
// buffer and their strides, in elements. CopyBox is StridedCopy over it; the
// CUDA context (core/cuda/device_kernels.h) runs the same copy on a device.
struct BoxCopy {
  int64_t src_offset = 0;
  int64_t dst_offset = 0;
  std::vector<int64_t> src_strides;
  std::vector<int64_t> dst_strides;
};
BoxCopy LayoutBoxCopy(const Tensor& src, const std::vector<int64_t>& src_start, const Tensor& dst,
                      const std::vector<int64_t>& dst_start, const Shape& box);

// Copies the box of extent `box` starting at `src_start` in `src` to
// `dst_start` in `dst` (same dtype; both contiguous row-major). Boxing steps
// and the slicing/assembly of logical tensors are each one call of it.
void CopyBox(const Tensor& src, const std::vector<int64_t>& src_start, Tensor* dst,
             const std::vector<int64_t>& dst_start, const Shape& box);

}  // namespace ofl
