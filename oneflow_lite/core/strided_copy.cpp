// StridedCopy (see strided_copy.h): axes of extent 1 are dropped and
// neighbouring axes contiguous in both layouts merged; the last axis is then
// copied with one memcpy when contiguous on both sides, element by element
// otherwise; the other axes are split into parallel chunks.
#include "oneflow_lite/core/strided_copy.h"

#include <algorithm>
#include <cstring>

#include "oneflow_lite/core/parallel_for.h"

namespace ofl {

std::vector<int64_t> ContiguousStrides(const Shape& shape) {
  std::vector<int64_t> strides(shape.ndim(), 1);
  for (int64_t i = shape.ndim() - 2; i >= 0; --i) strides[i] = strides[i + 1] * shape[i + 1];
  return strides;
}

namespace {

struct Layout {
  std::vector<int64_t> extent, src, dst;
};

Layout Simplify(const std::vector<int64_t>& extent, const std::vector<int64_t>& src,
                const std::vector<int64_t>& dst) {
  Layout l;
  for (size_t i = 0; i < extent.size(); ++i) {
    if (extent[i] == 1) continue;
    if (!l.extent.empty() && l.src.back() == extent[i] * src[i] &&
        l.dst.back() == extent[i] * dst[i]) {
      l.extent.back() *= extent[i];
      l.src.back() = src[i];
      l.dst.back() = dst[i];
    } else {
      l.extent.push_back(extent[i]);
      l.src.push_back(src[i]);
      l.dst.push_back(dst[i]);
    }
  }
  if (l.extent.empty()) l = {{1}, {1}, {1}};
  return l;
}

template <int64_t kSize>
void CopyElements(const char* src, int64_t src_stride, char* dst, int64_t dst_stride, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    std::memcpy(dst + i * dst_stride * kSize, src + i * src_stride * kSize, kSize);
  }
}

void CopyElements(const char* src, int64_t src_stride, char* dst, int64_t dst_stride, int64_t n,
                  int64_t size) {
  switch (size) {
    case 1:
      return CopyElements<1>(src, src_stride, dst, dst_stride, n);
    case 2:
      return CopyElements<2>(src, src_stride, dst, dst_stride, n);
    case 4:
      return CopyElements<4>(src, src_stride, dst, dst_stride, n);
    case 8:
      return CopyElements<8>(src, src_stride, dst, dst_stride, n);
    default:
      for (int64_t i = 0; i < n; ++i) {
        std::memcpy(dst + i * dst_stride * size, src + i * src_stride * size, size);
      }
  }
}

}  // namespace

void StridedCopy(const std::vector<int64_t>& extent, int64_t element_size, const void* src,
                 const std::vector<int64_t>& src_strides, void* dst,
                 const std::vector<int64_t>& dst_strides) {
  CHECK(extent.size() == src_strides.size() && extent.size() == dst_strides.size());
  for (int64_t e : extent) {
    if (e == 0) return;
  }
  const Layout l = Simplify(extent, src_strides, dst_strides);
  const int64_t last = static_cast<int64_t>(l.extent.size()) - 1;
  const int64_t inner = l.extent[last];
  const bool contiguous = l.src[last] == 1 && l.dst[last] == 1;
  int64_t rows = 1;
  for (int64_t i = 0; i < last; ++i) rows *= l.extent[i];
  const char* s = static_cast<const char*>(src);
  char* d = static_cast<char*>(dst);
  auto copy_rows = [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      int64_t src_offset = 0, dst_offset = 0, rest = r;
      for (int64_t i = last - 1; i >= 0; --i) {
        const int64_t index = rest % l.extent[i];
        rest /= l.extent[i];
        src_offset += index * l.src[i];
        dst_offset += index * l.dst[i];
      }
      const char* from = s + src_offset * element_size;
      char* to = d + dst_offset * element_size;
      if (contiguous) {
        std::memcpy(to, from, inner * element_size);
      } else {
        CopyElements(from, l.src[last], to, l.dst[last], inner, element_size);
      }
    }
  };
  ParallelFor(rows, copy_rows, std::max<int64_t>(1, kParallelGrain / inner));
}

BoxCopy LayoutBoxCopy(const Tensor& src, const std::vector<int64_t>& src_start, const Tensor& dst,
                      const std::vector<int64_t>& dst_start, const Shape& box) {
  CHECK(src.dtype() == dst.dtype()) << "CopyBox: dtypes differ";
  const int64_t nd = box.ndim();
  CHECK(src.shape().ndim() == nd && dst.shape().ndim() == nd &&
        static_cast<int64_t>(src_start.size()) == nd &&
        static_cast<int64_t>(dst_start.size()) == nd)
      << "CopyBox: rank mismatch";
  BoxCopy b{0, 0, ContiguousStrides(src.shape()), ContiguousStrides(dst.shape())};
  if (box.NumElements() == 0) return b;
  for (int64_t a = 0; a < nd; ++a) {
    CHECK(src_start[a] >= 0 && src_start[a] + box[a] <= src.shape()[a]) << "CopyBox: source box";
    CHECK(dst_start[a] >= 0 && dst_start[a] + box[a] <= dst.shape()[a]) << "CopyBox: target box";
    b.src_offset += src_start[a] * b.src_strides[a];
    b.dst_offset += dst_start[a] * b.dst_strides[a];
  }
  return b;
}

void CopyBox(const Tensor& src, const std::vector<int64_t>& src_start, Tensor* dst,
             const std::vector<int64_t>& dst_start, const Shape& box) {
  const BoxCopy b = LayoutBoxCopy(src, src_start, *dst, dst_start, box);
  if (box.NumElements() == 0) return;
  const int64_t size = SizeOf(src.dtype());
  StridedCopy(box.dims(), size, static_cast<const char*>(src.raw()) + b.src_offset * size,
              b.src_strides, static_cast<char*>(dst->raw()) + b.dst_offset * size, b.dst_strides);
}

}  // namespace ofl
