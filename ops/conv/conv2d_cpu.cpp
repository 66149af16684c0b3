// CPU kernels of conv2d, conv2d_grad_input and conv2d_grad_weight, for
// float32 and float64, by im2col + BLAS gemm (OpenBLAS cblas_sgemm /
// cblas_dgemm), one sample at a time:
//
//   col[C*kh*kw, Ho*Wo] = im2col(x[n])          (zero where the window is in the padding)
//   y[n]  [O, Ho*Wo]    = weight[O, C*kh*kw] * col
//   dcol                = weight^T * dy[n];   dx[n] = col2im(dcol)   (sums overlapping windows)
//   dweight            += dy[n] * col^T
//
// Why this and not oneDNN: one code path for both dtypes (oneDNN has no
// float64 convolution), nothing to cache per shape, and the same kernel is
// the reference for any later device. A 1x1 kernel with stride 1 and no
// padding skips im2col (col is x[n] itself). im2col/col2im run in parallel
// over channels (ParallelFor); the gemms use OpenBLAS's own threads, which
// KernelThreads and the runtime's step set. Shapes come from the local tensors, never from the
// shape attrs, so every SBP shard runs the same code. Stateless; safe to call
// from several threads at once on different tensors (the col buffer is per call).
#include <cblas.h>

#include <algorithm>
#include <limits>
#include <type_traits>
#include <vector>

#include "ops/conv/conv_geometry.h"
#include "ops/kernel.h"
#include "ops/parallel.h"

namespace ofl {

namespace {

// Row-major C[M, N] = alpha * op(A) * op(B) + beta * C with C contiguous (ldc = N).
// Degenerate sizes (a shard with no rows) are handled here: BLAS rejects ld = 0.
template <typename T>
void Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const T* a, int64_t lda,
          const T* b, int64_t ldb, T beta, T* c) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    if (beta == T(0)) std::fill(c, c + m * n, T(0));
    return;
  }
  // OpenBLAS takes 32-bit sizes (blasint) in this build.
  constexpr int64_t kMax = std::numeric_limits<blasint>::max();
  CHECK(m <= kMax && n <= kMax && k <= kMax && lda <= kMax && ldb <= kMax)
      << "gemm too large for BLAS: " << m << " x " << n << " x " << k;
  const auto to_blas = [](int64_t v) { return static_cast<blasint>(v); };
  const CBLAS_TRANSPOSE ta = trans_a ? CblasTrans : CblasNoTrans;
  const CBLAS_TRANSPOSE tb = trans_b ? CblasTrans : CblasNoTrans;
  if constexpr (std::is_same_v<T, float>) {
    cblas_sgemm(CblasRowMajor, ta, tb, to_blas(m), to_blas(n), to_blas(k), 1.0f, a, to_blas(lda), b,
                to_blas(ldb), beta, c, to_blas(n));
  } else {
    cblas_dgemm(CblasRowMajor, ta, tb, to_blas(m), to_blas(n), to_blas(k), 1.0, a, to_blas(lda), b,
                to_blas(ldb), beta, c, to_blas(n));
  }
}

// Channels per ParallelFor chunk so that a chunk moves about kParallelGrain values.
int64_t ChannelGrain(const Conv2dGeometry& g) {
  const int64_t per_channel = g.kernel_h * g.kernel_w * g.col_cols();
  return std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(1, per_channel));
}

// True when im2col would copy x unchanged (1x1 kernel, stride 1, no padding).
bool IsPointwise(const Conv2dGeometry& g) {
  return g.kernel_h == 1 && g.kernel_w == 1 && g.stride_h == 1 && g.stride_w == 1 && g.pad_h == 0 &&
         g.pad_w == 0;
}

// x [C, H, W] -> col [C, kh, kw, Ho, Wo].
template <typename T>
void Im2Col(const T* x, const Conv2dGeometry& g, T* col) {
  const int64_t plane = g.height * g.width;
  ParallelFor(
      g.in_channels,
      [&](int64_t c_begin, int64_t c_end) {
        for (int64_t c = c_begin; c < c_end; ++c) {
          const T* xc = x + c * plane;
          T* out = col + c * g.kernel_h * g.kernel_w * g.col_cols();
          for (int64_t i = 0; i < g.kernel_h; ++i) {
            for (int64_t j = 0; j < g.kernel_w; ++j) {
              for (int64_t oh = 0; oh < g.out_h; ++oh) {
                const int64_t ih = oh * g.stride_h - g.pad_h + i * g.dilation_h;
                if (ih < 0 || ih >= g.height) {
                  std::fill(out, out + g.out_w, T(0));
                  out += g.out_w;
                  continue;
                }
                const T* row = xc + ih * g.width;
                for (int64_t ow = 0; ow < g.out_w; ++ow) {
                  const int64_t iw = ow * g.stride_w - g.pad_w + j * g.dilation_w;
                  *out++ = (iw >= 0 && iw < g.width) ? row[iw] : T(0);
                }
              }
            }
          }
        }
      },
      ChannelGrain(g));
}

// col [C, kh, kw, Ho, Wo] -> dx [C, H, W], summing every window that covers
// a pixel. Each channel writes only its own plane, so channels run in parallel.
template <typename T>
void Col2Im(const T* col, const Conv2dGeometry& g, T* dx) {
  const int64_t plane = g.height * g.width;
  ParallelFor(
      g.in_channels,
      [&](int64_t c_begin, int64_t c_end) {
        for (int64_t c = c_begin; c < c_end; ++c) {
          T* dxc = dx + c * plane;
          std::fill(dxc, dxc + plane, T(0));
          const T* in = col + c * g.kernel_h * g.kernel_w * g.col_cols();
          for (int64_t i = 0; i < g.kernel_h; ++i) {
            for (int64_t j = 0; j < g.kernel_w; ++j) {
              for (int64_t oh = 0; oh < g.out_h; ++oh, in += g.out_w) {
                const int64_t ih = oh * g.stride_h - g.pad_h + i * g.dilation_h;
                if (ih < 0 || ih >= g.height) continue;
                T* row = dxc + ih * g.width;
                for (int64_t ow = 0; ow < g.out_w; ++ow) {
                  const int64_t iw = ow * g.stride_w - g.pad_w + j * g.dilation_w;
                  if (iw >= 0 && iw < g.width) row[iw] += in[ow];
                }
              }
            }
          }
        }
      },
      ChannelGrain(g));
}

template <typename T>
void Conv2dForward(const Tensor& x, const Tensor& w, const Conv2dGeometry& g, Tensor& y) {
  const T* xd = x.data<T>();
  const T* wd = w.data<T>();
  T* yd = y.data<T>();
  const int64_t rows = g.col_rows(), cols = g.col_cols();
  const bool pointwise = IsPointwise(g);
  std::vector<T> col(pointwise ? 0 : rows * cols);
  for (int64_t n = 0; n < g.batch; ++n) {
    const T* xn = xd + n * g.in_channels * g.height * g.width;
    if (!pointwise) Im2Col(xn, g, col.data());
    Gemm<T>(false, false, g.out_channels, cols, rows, wd, rows, pointwise ? xn : col.data(), cols,
            T(0), yd + n * g.out_channels * cols);
  }
}

template <typename T>
void Conv2dBackwardInput(const Tensor& dy, const Tensor& w, const Conv2dGeometry& g, Tensor& dx) {
  const T* dyd = dy.data<T>();
  const T* wd = w.data<T>();
  T* dxd = dx.data<T>();
  const int64_t rows = g.col_rows(), cols = g.col_cols();
  const bool pointwise = IsPointwise(g);
  std::vector<T> col(pointwise ? 0 : rows * cols);
  for (int64_t n = 0; n < g.batch; ++n) {
    T* dxn = dxd + n * g.in_channels * g.height * g.width;
    Gemm<T>(true, false, rows, cols, g.out_channels, wd, rows, dyd + n * g.out_channels * cols,
            cols, T(0), pointwise ? dxn : col.data());
    if (!pointwise) Col2Im(col.data(), g, dxn);
  }
}

template <typename T>
void Conv2dBackwardWeight(const Tensor& x, const Tensor& dy, const Conv2dGeometry& g, Tensor& dw) {
  const T* xd = x.data<T>();
  const T* dyd = dy.data<T>();
  T* dwd = dw.data<T>();
  const int64_t rows = g.col_rows(), cols = g.col_cols();
  const bool pointwise = IsPointwise(g);
  std::vector<T> col(pointwise ? 0 : rows * cols);
  std::fill(dwd, dwd + dw.numel(), T(0));
  for (int64_t n = 0; n < g.batch; ++n) {
    const T* xn = xd + n * g.in_channels * g.height * g.width;
    if (!pointwise) Im2Col(xn, g, col.data());
    Gemm<T>(false, true, g.out_channels, rows, cols, dyd + n * g.out_channels * cols, cols,
            pointwise ? xn : col.data(), cols, T(1), dwd);
  }
}

void Conv2dKernel(KernelContext& k) {
  const Tensor& x = k.in(0);
  const Tensor& w = k.in(1);
  Tensor& y = k.out(0);
  Conv2dGeometry g = Conv2dGeometry::Make(x.shape(), w.shape(), k.attr());
  CHECK(y.shape() == g.output_shape()) << k.op_name << ": y " << y.shape();
  OFL_DISPATCH_FLOAT(y.dtype(), T, Conv2dForward<T>(x, w, g, y));
}

void Conv2dGradInputKernel(KernelContext& k) {
  const Tensor& dy = k.in(0);
  const Tensor& w = k.in(1);
  Tensor& dx = k.out(0);
  Conv2dGeometry g = Conv2dGeometry::Make(dx.shape(), w.shape(), k.attr());
  CHECK(dy.shape() == g.output_shape()) << k.op_name << ": dy " << dy.shape();
  OFL_DISPATCH_FLOAT(dx.dtype(), T, Conv2dBackwardInput<T>(dy, w, g, dx));
}

void Conv2dGradWeightKernel(KernelContext& k) {
  const Tensor& x = k.in(0);
  const Tensor& dy = k.in(1);
  Tensor& dw = k.out(0);
  Conv2dGeometry g = Conv2dGeometry::Make(x.shape(), dw.shape(), k.attr());
  CHECK(dy.shape() == g.output_shape()) << k.op_name << ": dy " << dy.shape();
  OFL_DISPATCH_FLOAT(dw.dtype(), T, Conv2dBackwardWeight<T>(x, dy, g, dw));
}

OFL_REGISTER_KERNEL("conv2d", DeviceType::kCPU, Conv2dKernel);
OFL_REGISTER_KERNEL("conv2d_grad_input", DeviceType::kCPU, Conv2dGradInputKernel);
OFL_REGISTER_KERNEL("conv2d_grad_weight", DeviceType::kCPU, Conv2dGradWeightKernel);

}  // namespace
}  // namespace ofl
