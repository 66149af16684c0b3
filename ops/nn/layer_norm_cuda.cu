// CUDA kernels of layer_norm and layer_norm_grad (layer_norm.cpp registers
// the ops). x is viewed as [rows, cols]. One block per row computes the row
// statistics and dx with double sums and fixed-order block reductions; one
// thread per column sums dgamma and dbeta over the rows in row order (the
// CPU's order), so every output has one writer and results are deterministic.
// The formulas and casts are layer_norm_cpu.cpp's.
#include "ops/cuda_device.cuh"
#include "ops/cuda_util.h"

namespace ofl {

namespace {

unsigned RowBlocks(int64_t rows) { return static_cast<unsigned>(std::min<int64_t>(rows, 65536)); }

template <typename T>
__global__ void Forward(int64_t rows, int64_t cols, double epsilon, const T* x, const T* gamma,
                        const T* beta, T* y, T* mean_out, T* inv_std_out) {
  __shared__ double scratch[32];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* xr = x + r * cols;
    double sum = 0;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) sum += xr[c];
    sum = cuda::BlockReduce(sum, cuda::SumOp(), scratch);
    const double mean = sum / static_cast<double>(cols);
    double squares = 0;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
      squares += (xr[c] - mean) * (xr[c] - mean);
    }
    squares = cuda::BlockReduce(squares, cuda::SumOp(), scratch);
    const double inv_std = 1.0 / sqrt(squares / static_cast<double>(cols) + epsilon);
    T* yr = y + r * cols;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
      yr[c] = static_cast<T>((xr[c] - mean) * inv_std) * gamma[c] + beta[c];
    }
    if (threadIdx.x == 0) {
      mean_out[r] = static_cast<T>(mean);
      inv_std_out[r] = static_cast<T>(inv_std);
    }
  }
}

// dx = inv_std * (g - mean(g) - xhat * mean(g * xhat)) with g = dy * gamma.
template <typename T>
__global__ void InputGrad(int64_t rows, int64_t cols, const T* x, const T* gamma, const T* mean,
                          const T* inv_std, const T* dy, T* dx) {
  __shared__ double scratch[32];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const int64_t base = r * cols;
    const double m = mean[r], s = inv_std[r];
    double sum_g = 0, sum_g_xhat = 0;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
      const double g = static_cast<double>(dy[base + c]) * gamma[c];
      sum_g += g;
      sum_g_xhat += g * (x[base + c] - m) * s;
    }
    sum_g = cuda::BlockReduce(sum_g, cuda::SumOp(), scratch);
    sum_g_xhat = cuda::BlockReduce(sum_g_xhat, cuda::SumOp(), scratch);
    const double mean_g = sum_g / static_cast<double>(cols);
    const double mean_g_xhat = sum_g_xhat / static_cast<double>(cols);
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
      const double g = static_cast<double>(dy[base + c]) * gamma[c];
      const double xhat = (x[base + c] - m) * s;
      dx[base + c] = static_cast<T>(s * (g - mean_g - xhat * mean_g_xhat));
    }
  }
}

// dgamma = sum over rows of dy * xhat; dbeta = sum over rows of dy.
template <typename T>
__global__ void ParamGrads(int64_t rows, int64_t cols, const T* x, const T* mean, const T* inv_std,
                           const T* dy, T* dgamma, T* dbeta) {
  OFL_KERNEL_LOOP(c, cols) {
    double sum_gamma = 0, sum_beta = 0;
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t base = r * cols;
      const double m = mean[r], s = inv_std[r];
      sum_gamma += dy[base + c] * (x[base + c] - m) * s;
      sum_beta += dy[base + c];
    }
    dgamma[c] = static_cast<T>(sum_gamma);
    dbeta[c] = static_cast<T>(sum_beta);
  }
}

int64_t Rows(const KernelContext& k, int64_t cols) {
  return cols == 0 ? 0 : k.in(0).numel() / cols;
}

void LayerNormKernel(KernelContext& k) {
  cuda::DeviceGuard guard(k.device.index);
  const cudaStream_t stream = cuda::StreamOf(k);
  const int64_t cols = k.in(1).numel();
  const int64_t rows = Rows(k, cols);
  if (rows == 0) return;
  const double epsilon = k.attr().Get<double>("epsilon");
  OFL_DISPATCH_FLOAT(k.in(0).dtype(), T, {
    Forward<T><<<RowBlocks(rows), cuda::kThreads, 0, stream>>>(
        rows, cols, epsilon, k.in(0).data<T>(), k.in(1).data<T>(), k.in(2).data<T>(),
        k.out(0).data<T>(), k.out(1).data<T>(), k.out(2).data<T>());
    OFL_CUDA_LAUNCH_CHECK();
  });
}

void LayerNormGradKernel(KernelContext& k) {
  cuda::DeviceGuard guard(k.device.index);
  const cudaStream_t stream = cuda::StreamOf(k);
  const int64_t cols = k.in(1).numel();
  const int64_t rows = Rows(k, cols);
  OFL_DISPATCH_FLOAT(k.in(0).dtype(), T, {
    const T* x = k.in(0).data<T>();
    const T* mean = k.in(2).data<T>();
    const T* inv_std = k.in(3).data<T>();
    const T* dy = k.in(4).data<T>();
    if (rows > 0) {
      InputGrad<T><<<RowBlocks(rows), cuda::kThreads, 0, stream>>>(
          rows, cols, x, k.in(1).data<T>(), mean, inv_std, dy, k.out(0).data<T>());
      OFL_CUDA_LAUNCH_CHECK();
    }
    if (cols > 0) {
      ParamGrads<T><<<cuda::BlocksFor(cols), cuda::kThreads, 0, stream>>>(
          rows, cols, x, mean, inv_std, dy, k.out(1).data<T>(), k.out(2).data<T>());
      OFL_CUDA_LAUNCH_CHECK();
    }
  });
}

}  // namespace

OFL_REGISTER_KERNEL("layer_norm", DeviceType::kCUDA, LayerNormKernel);
OFL_REGISTER_KERNEL("layer_norm_grad", DeviceType::kCUDA, LayerNormGradKernel);

}  // namespace ofl
