// Conv2dGeometry and Pool2dGeometry: the sizes of one 2-D convolution or
// pooling on NCHW tensors, shared by the op registrations (conv2d.cpp,
// pool2d.cpp) and their CPU kernels. The kernels build them from their local
// tensors' shapes (never from logical shape attrs), so that they run
// unchanged on any shard an SBP signature gives them. Plain values.
#pragma once

#include <cstdint>
#include <vector>

#include "oneflow_lite/core/attr.h"
#include "oneflow_lite/core/shape.h"

namespace ofl {

// floor((size + 2 * pad - dilation * (kernel - 1) - 1) / stride) + 1; may be <= 0.
// Computed in 128 bits (pads and dilations are user attrs, sizes up to
// int64) and clamped to INT64_MAX, which the op's inference reports as too
// large; stride >= 1.
inline int64_t ConvOutputSize(int64_t size, int64_t kernel, int64_t stride, int64_t pad,
                              int64_t dilation) {
  const __int128 span = static_cast<__int128>(size) + 2 * static_cast<__int128>(pad) -
                        static_cast<__int128>(dilation) * (static_cast<__int128>(kernel) - 1) - 1;
  if (span < 0) return 0;
  const __int128 out = span / stride + 1;
  return out > INT64_MAX ? INT64_MAX : static_cast<int64_t>(out);
}

struct Conv2dGeometry {
  int64_t batch = 0, in_channels = 0, height = 0, width = 0;  // x: [N, C, H, W]
  int64_t out_channels = 0, kernel_h = 0, kernel_w = 0;       // weight: [O, C, kh, kw]
  int64_t out_h = 0, out_w = 0;                               // y: [N, O, Ho, Wo]
  int64_t stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0, dilation_h = 1, dilation_w = 1;

  // From the shapes of x and weight and the attrs stride, padding, dilation
  // (validated by the op's inference).
  static Conv2dGeometry Make(const Shape& x, const Shape& weight, const AttrMap& attrs) {
    const auto& stride = attrs.Get<std::vector<int64_t>>("stride");
    const auto& padding = attrs.Get<std::vector<int64_t>>("padding");
    const auto& dilation = attrs.Get<std::vector<int64_t>>("dilation");
    Conv2dGeometry g;
    g.batch = x[0];
    g.in_channels = x[1];
    g.height = x[2];
    g.width = x[3];
    g.out_channels = weight[0];
    g.kernel_h = weight[2];
    g.kernel_w = weight[3];
    g.stride_h = stride[0];
    g.stride_w = stride[1];
    g.pad_h = padding[0];
    g.pad_w = padding[1];
    g.dilation_h = dilation[0];
    g.dilation_w = dilation[1];
    g.out_h = ConvOutputSize(g.height, g.kernel_h, g.stride_h, g.pad_h, g.dilation_h);
    g.out_w = ConvOutputSize(g.width, g.kernel_w, g.stride_w, g.pad_w, g.dilation_w);
    return g;
  }
  Shape output_shape() const { return Shape({batch, out_channels, out_h, out_w}); }
  // Rows of the im2col matrix (C * kh * kw) and its columns (Ho * Wo).
  int64_t col_rows() const { return in_channels * kernel_h * kernel_w; }
  int64_t col_cols() const { return out_h * out_w; }
  double flops() const {
    double f = 2.0;
    for (int64_t d : {batch, out_channels, out_h, out_w, in_channels, kernel_h, kernel_w}) {
      f *= static_cast<double>(d);
    }
    return f;
  }
};

struct Pool2dGeometry {
  int64_t planes = 0, height = 0, width = 0;  // x: [N, C, H, W]; planes = N * C
  int64_t kernel_h = 0, kernel_w = 0, stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0;
  int64_t out_h = 0, out_w = 0;

  // From x's shape and the attrs kernel_size, stride (empty = kernel_size), padding.
  static Pool2dGeometry Make(const Shape& x, const AttrMap& attrs) {
    const auto& kernel = attrs.Get<std::vector<int64_t>>("kernel_size");
    const auto& stride = attrs.Get<std::vector<int64_t>>("stride");
    const auto& padding = attrs.Get<std::vector<int64_t>>("padding");
    Pool2dGeometry g;
    g.planes = x[0] * x[1];
    g.height = x[2];
    g.width = x[3];
    g.kernel_h = kernel[0];
    g.kernel_w = kernel[1];
    g.stride_h = stride.empty() ? kernel[0] : stride[0];
    g.stride_w = stride.empty() ? kernel[1] : stride[1];
    g.pad_h = padding[0];
    g.pad_w = padding[1];
    g.out_h = ConvOutputSize(g.height, g.kernel_h, g.stride_h, g.pad_h, 1);
    g.out_w = ConvOutputSize(g.width, g.kernel_w, g.stride_w, g.pad_w, 1);
    return g;
  }
  int64_t window() const { return kernel_h * kernel_w; }
};

}  // namespace ofl
