// CPU kernels of layer_norm and layer_norm_grad (layer_norm.cpp registers
// the ops). x is viewed as [rows, cols] with cols = the normalised extent.
// Row statistics and row sums accumulate in double for both float types,
// in kLanes interleaved lanes (lane l takes columns l, l + kLanes, ...)
// added in lane order at the end, so the loops vectorise. ParallelFor runs
// over rows for y and dx; dgamma and dbeta are summed over fixed blocks of
// kRowBlock rows in parallel (each block streams its rows whole), and the
// blocks' partial sums then added in block order. Every order is fixed by
// the shapes alone: the sums do not depend on the thread count. The row
// loops are compiled for every level of ops/cpu_isa.h and run the active
// one's (the vector levels may fuse multiply-adds: one level is bitwise
// reproducible, two levels may differ in the last bit).
#include <algorithm>
#include <cmath>
#include <vector>

#include "ops/cpu_isa.h"
#include "ops/kernel.h"
#include "ops/parallel.h"

namespace ofl {

namespace {

constexpr int kLanes = 8;
constexpr int64_t kRowBlock = 64;

#define OFL_INLINE inline __attribute__((always_inline))

struct RowView {
  int64_t rows, cols;
};

RowView ViewRows(const Tensor& x, const Tensor& gamma) {
  const int64_t cols = gamma.numel();
  return {cols == 0 ? 0 : x.numel() / cols, cols};
}

int64_t RowGrain(int64_t cols) { return std::max<int64_t>(1, kParallelGrain / cols); }

OFL_INLINE double AddLanes(const double* lanes) {
  double s = 0;
  for (int l = 0; l < kLanes; ++l) s += lanes[l];
  return s;
}

// ---- forward ---------------------------------------------------------------

template <typename T>
struct ForwardArgs {
  const T *x, *gamma, *beta;
  T *y, *mean, *inv_std;
  int64_t cols;
  double epsilon;
};

template <typename T>
OFL_INLINE void ForwardRows(const ForwardArgs<T>& a, int64_t begin, int64_t end) {
  const int64_t cols = a.cols, body = cols / kLanes * kLanes;
  for (int64_t r = begin; r < end; ++r) {
    const T* xr = a.x + r * cols;
    double lanes[kLanes] = {};
    for (int64_t c = 0; c < body; c += kLanes) {
      for (int l = 0; l < kLanes; ++l) lanes[l] += xr[c + l];
    }
    for (int64_t c = body; c < cols; ++c) lanes[c - body] += xr[c];
    const double mean = AddLanes(lanes) / static_cast<double>(cols);
    double sq[kLanes] = {};
    for (int64_t c = 0; c < body; c += kLanes) {
      for (int l = 0; l < kLanes; ++l) sq[l] += (xr[c + l] - mean) * (xr[c + l] - mean);
    }
    for (int64_t c = body; c < cols; ++c) sq[c - body] += (xr[c] - mean) * (xr[c] - mean);
    const double inv_std = 1.0 / std::sqrt(AddLanes(sq) / static_cast<double>(cols) + a.epsilon);
    T* yr = a.y + r * cols;
    for (int64_t c = 0; c < cols; ++c) {
      yr[c] = static_cast<T>((xr[c] - mean) * inv_std) * a.gamma[c] + a.beta[c];
    }
    a.mean[r] = static_cast<T>(mean);
    a.inv_std[r] = static_cast<T>(inv_std);
  }
}

// ---- dx = inv_std * (g - mean(g) - xhat * mean(g * xhat)), g = dy * gamma --

template <typename T>
struct InputGradArgs {
  const T *x, *gamma, *mean, *inv_std, *dy;
  T* dx;
  int64_t cols;
};

template <typename T>
OFL_INLINE void InputGradRows(const InputGradArgs<T>& a, int64_t begin, int64_t end) {
  const int64_t cols = a.cols, body = cols / kLanes * kLanes;
  for (int64_t r = begin; r < end; ++r) {
    const T *xr = a.x + r * cols, *dyr = a.dy + r * cols;
    const double m = a.mean[r], s = a.inv_std[r];
    double sum_g[kLanes] = {}, sum_gx[kLanes] = {};
    for (int64_t c = 0; c < body; c += kLanes) {
      for (int l = 0; l < kLanes; ++l) {
        const double g = static_cast<double>(dyr[c + l]) * a.gamma[c + l];
        sum_g[l] += g;
        sum_gx[l] += g * (xr[c + l] - m) * s;
      }
    }
    for (int64_t c = body; c < cols; ++c) {
      const double g = static_cast<double>(dyr[c]) * a.gamma[c];
      sum_g[c - body] += g;
      sum_gx[c - body] += g * (xr[c] - m) * s;
    }
    const double mean_g = AddLanes(sum_g) / static_cast<double>(cols);
    const double mean_gx = AddLanes(sum_gx) / static_cast<double>(cols);
    T* dxr = a.dx + r * cols;
    for (int64_t c = 0; c < cols; ++c) {
      const double g = static_cast<double>(dyr[c]) * a.gamma[c];
      const double xhat = (xr[c] - m) * s;
      dxr[c] = static_cast<T>(s * (g - mean_g - xhat * mean_gx));
    }
  }
}

// ---- dgamma = sum over rows of dy * xhat; dbeta = sum over rows of dy ------

template <typename T>
struct ParamGradArgs {
  const T *x, *mean, *inv_std, *dy;
  int64_t rows, cols;
  double* partial;  // [blocks][2][cols]: dgamma's then dbeta's partial sums
};

template <typename T>
OFL_INLINE void ParamGradBlocks(const ParamGradArgs<T>& a, int64_t b0, int64_t b1) {
  const int64_t cols = a.cols;
  for (int64_t b = b0; b < b1; ++b) {
    double* dgamma = a.partial + b * 2 * cols;
    double* dbeta = dgamma + cols;
    for (int64_t r = b * kRowBlock; r < std::min(a.rows, (b + 1) * kRowBlock); ++r) {
      const T *xr = a.x + r * cols, *dyr = a.dy + r * cols;
      const double m = a.mean[r], s = a.inv_std[r];
      for (int64_t c = 0; c < cols; ++c) {
        dgamma[c] += dyr[c] * (xr[c] - m) * s;
        dbeta[c] += dyr[c];
      }
    }
  }
}

// ---- one function per level -------------------------------------------------

#define OFL_LEVELS(name, Args)                                               \
  template <typename T>                                                      \
  OFL_TARGET_AVX512 void name##512(const Args<T>& a, int64_t b, int64_t e) { \
    name(a, b, e);                                                           \
  }                                                                          \
  template <typename T>                                                      \
  OFL_TARGET_AVX2 void name##256(const Args<T>& a, int64_t b, int64_t e) {   \
    name(a, b, e);                                                           \
  }                                                                          \
  template <typename T>                                                      \
  void name##Base(const Args<T>& a, int64_t b, int64_t e) {                  \
    name(a, b, e);                                                           \
  }                                                                          \
  template <typename T>                                                      \
  auto name##Active() {                                                      \
    return PickByCpuIsa<void (*)(const Args<T>&, int64_t, int64_t)>(         \
        name##512 < T >, name##256 < T >, name##Base<T>);                    \
  }

OFL_LEVELS(ForwardRows, ForwardArgs)
OFL_LEVELS(InputGradRows, InputGradArgs)
OFL_LEVELS(ParamGradBlocks, ParamGradArgs)
#undef OFL_LEVELS

template <typename T>
void Forward(KernelContext& k) {
  const RowView v = ViewRows(k.in(0), k.in(1));
  const ForwardArgs<T> a{k.in(0).data<T>(),
                         k.in(1).data<T>(),
                         k.in(2).data<T>(),
                         k.out(0).data<T>(),
                         k.out(1).data<T>(),
                         k.out(2).data<T>(),
                         v.cols,
                         k.attr().Get<double>("epsilon")};
  const auto run = ForwardRowsActive<T>();
  ParallelFor(
      v.rows, [&](int64_t b, int64_t e) { run(a, b, e); }, RowGrain(v.cols));
}

template <typename T>
void InputGrad(KernelContext& k, const RowView& v) {
  const InputGradArgs<T> a{k.in(0).data<T>(),
                           k.in(1).data<T>(),
                           k.in(2).data<T>(),
                           k.in(3).data<T>(),
                           k.in(4).data<T>(),
                           k.out(0).data<T>(),
                           v.cols};
  const auto run = InputGradRowsActive<T>();
  ParallelFor(
      v.rows, [&](int64_t b, int64_t e) { run(a, b, e); }, RowGrain(v.cols));
}

template <typename T>
void ParamGrads(KernelContext& k, const RowView& v) {
  const int64_t blocks = (v.rows + kRowBlock - 1) / kRowBlock;
  std::vector<double> partial(static_cast<size_t>(blocks * 2 * v.cols), 0.0);
  const ParamGradArgs<T> a{
      k.in(0).data<T>(), k.in(2).data<T>(), k.in(3).data<T>(), k.in(4).data<T>(), v.rows, v.cols,
      partial.data()};
  const auto run = ParamGradBlocksActive<T>();
  ParallelFor(
      blocks, [&](int64_t b, int64_t e) { run(a, b, e); },
      std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(1, kRowBlock * v.cols)));
  T* dgamma = k.out(1).data<T>();
  T* dbeta = k.out(2).data<T>();
  for (int64_t c = 0; c < v.cols; ++c) {
    double g = 0, b = 0;
    for (int64_t i = 0; i < blocks; ++i) {
      g += partial[(i * 2) * v.cols + c];
      b += partial[(i * 2 + 1) * v.cols + c];
    }
    dgamma[c] = static_cast<T>(g);
    dbeta[c] = static_cast<T>(b);
  }
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
