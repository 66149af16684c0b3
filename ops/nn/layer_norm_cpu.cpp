// CPU kernels of layer_norm and layer_norm_grad (layer_norm.cpp registers
// the ops). x is viewed as [rows, cols] with cols = the normalised extent.
// Row statistics and row sums accumulate in double for both float types.
// ParallelFor runs over rows for y and dx, and over columns for dgamma and
// dbeta, so every output element has one writer and sums are deterministic.
#include <algorithm>
#include <cmath>
#include <vector>

#include "ops/kernel.h"
#include "ops/parallel.h"

namespace ofl {

namespace {

struct RowView {
  int64_t rows, cols;
};

RowView ViewRows(const Tensor& x, const Tensor& gamma) {
  const int64_t cols = gamma.numel();
  return {cols == 0 ? 0 : x.numel() / cols, cols};
}

int64_t RowGrain(int64_t cols) { return std::max<int64_t>(1, kParallelGrain / cols); }

template <typename T>
void Forward(KernelContext& k) {
  const RowView v = ViewRows(k.in(0), k.in(1));
  const double epsilon = k.attr().Get<double>("epsilon");
  const T* x = k.in(0).data<T>();
  const T* gamma = k.in(1).data<T>();
  const T* beta = k.in(2).data<T>();
  T* y = k.out(0).data<T>();
  T* mean_out = k.out(1).data<T>();
  T* inv_std_out = k.out(2).data<T>();
  ParallelFor(
      v.rows,
      [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r) {
          const T* xr = x + r * v.cols;
          double sum = 0;
          for (int64_t c = 0; c < v.cols; ++c) sum += xr[c];
          const double mean = sum / static_cast<double>(v.cols);
          double squares = 0;
          for (int64_t c = 0; c < v.cols; ++c) squares += (xr[c] - mean) * (xr[c] - mean);
          const double inv_std = 1.0 / std::sqrt(squares / static_cast<double>(v.cols) + epsilon);
          T* yr = y + r * v.cols;
          for (int64_t c = 0; c < v.cols; ++c) {
            yr[c] = static_cast<T>((xr[c] - mean) * inv_std) * gamma[c] + beta[c];
          }
          mean_out[r] = static_cast<T>(mean);
          inv_std_out[r] = static_cast<T>(inv_std);
        }
      },
      RowGrain(v.cols));
}

// dx = inv_std * (g - mean(g) - xhat * mean(g * xhat)) with g = dy * gamma.
template <typename T>
void InputGrad(KernelContext& k, const RowView& v) {
  const T* x = k.in(0).data<T>();
  const T* gamma = k.in(1).data<T>();
  const T* mean = k.in(2).data<T>();
  const T* inv_std = k.in(3).data<T>();
  const T* dy = k.in(4).data<T>();
  T* dx = k.out(0).data<T>();
  ParallelFor(
      v.rows,
      [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r) {
          const int64_t base = r * v.cols;
          const double m = mean[r], s = inv_std[r];
          double sum_g = 0, sum_g_xhat = 0;
          for (int64_t c = 0; c < v.cols; ++c) {
            const double g = static_cast<double>(dy[base + c]) * gamma[c];
            sum_g += g;
            sum_g_xhat += g * (x[base + c] - m) * s;
          }
          const double mean_g = sum_g / static_cast<double>(v.cols);
          const double mean_g_xhat = sum_g_xhat / static_cast<double>(v.cols);
          for (int64_t c = 0; c < v.cols; ++c) {
            const double g = static_cast<double>(dy[base + c]) * gamma[c];
            const double xhat = (x[base + c] - m) * s;
            dx[base + c] = static_cast<T>(s * (g - mean_g - xhat * mean_g_xhat));
          }
        }
      },
      RowGrain(v.cols));
}

// dgamma = sum over rows of dy * xhat; dbeta = sum over rows of dy.
template <typename T>
void ParamGrads(KernelContext& k, const RowView& v) {
  const T* x = k.in(0).data<T>();
  const T* mean = k.in(2).data<T>();
  const T* inv_std = k.in(3).data<T>();
  const T* dy = k.in(4).data<T>();
  T* dgamma = k.out(1).data<T>();
  T* dbeta = k.out(2).data<T>();
  ParallelFor(
      v.cols,
      [&](int64_t begin, int64_t end) {
        std::vector<double> sum_gamma(end - begin, 0.0), sum_beta(end - begin, 0.0);
        for (int64_t r = 0; r < v.rows; ++r) {
          const int64_t base = r * v.cols;
          const double m = mean[r], s = inv_std[r];
          for (int64_t c = begin; c < end; ++c) {
            sum_gamma[c - begin] += dy[base + c] * (x[base + c] - m) * s;
            sum_beta[c - begin] += dy[base + c];
          }
        }
        for (int64_t c = begin; c < end; ++c) {
          dgamma[c] = static_cast<T>(sum_gamma[c - begin]);
          dbeta[c] = static_cast<T>(sum_beta[c - begin]);
        }
      },
      std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(1, v.rows)));
}

void LayerNormKernel(KernelContext& k) { OFL_DISPATCH_FLOAT(k.in(0).dtype(), T, Forward<T>(k)); }

void LayerNormGradKernel(KernelContext& k) {
  const RowView v = ViewRows(k.in(0), k.in(1));
  OFL_DISPATCH_FLOAT(k.in(0).dtype(), T, {
    InputGrad<T>(k, v);
    ParamGrads<T>(k, v);
  });
}

}  // namespace

OFL_REGISTER_KERNEL("layer_norm", DeviceType::kCPU, LayerNormKernel);
OFL_REGISTER_KERNEL("layer_norm_grad", DeviceType::kCPU, LayerNormGradKernel);

}  // namespace ofl
