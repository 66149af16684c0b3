// CUDA kernels of add_n, ones_like and zeros_like (fill.cpp registers the
// ops). add_n sums its inputs in argument order per element, in chunks of
// kChunk inputs per launch (the running sum is stored in T between chunks,
// as the CPU kernel's T accumulator), so the result equals the CPU's.
// bfloat16 sums in float and rounds once per chunk.
#include <algorithm>

#include "ops/cuda_device.cuh"
#include "ops/cuda_util.h"

namespace ofl {

namespace {

constexpr int kChunk = 16;

template <typename T>
struct Inputs {
  const T* x[kChunk];
  int count;
};

// y = (first ? x[0] : y) + the other inputs of the chunk, left to right.
template <typename T>
__global__ void AddChunk(int64_t n, Inputs<T> in, bool first, T* y) {
  OFL_KERNEL_LOOP(i, n) {
    cuda::Compute<T> s = cuda::Load(first ? in.x[0][i] : y[i]);
    for (int j = first ? 1 : 0; j < in.count; ++j) s += cuda::Load(in.x[j][i]);
    y[i] = cuda::Store<T>(s);
  }
}

template <typename T>
void AddN(KernelContext& k, cudaStream_t stream) {
  Tensor& out = k.out(0);
  const int64_t n = out.numel();
  if (n == 0) return;
  const int total = static_cast<int>(k.inputs.size());
  for (int begin = 0; begin < total; begin += kChunk) {
    Inputs<T> in{};
    in.count = std::min(kChunk, total - begin);
    for (int j = 0; j < in.count; ++j) in.x[j] = cuda::Data<T>(*k.inputs[begin + j]);
    AddChunk<T>
        <<<cuda::BlocksFor(n), cuda::kThreads, 0, stream>>>(n, in, begin == 0, cuda::Data<T>(out));
    OFL_CUDA_LAUNCH_CHECK();
  }
}

void AddNKernel(KernelContext& k) {
  cuda::DeviceGuard guard(k.device.index);
  const cudaStream_t stream = cuda::StreamOf(k);
  OFL_CUDA_DISPATCH_FLOAT(k.out(0).dtype(), T, AddN<T>(k, stream));
}

KernelFn FillKernel(double value) {
  return [value](KernelContext& k) {
    cuda::DeviceGuard guard(k.device.index);
    cuda::Fill(k.out(0), value, cuda::StreamOf(k));
  };
}

OFL_REGISTER_KERNEL("add_n", DeviceType::kCUDA, AddNKernel);
OFL_REGISTER_KERNEL("ones_like", DeviceType::kCUDA, FillKernel(1.0));
OFL_REGISTER_KERNEL("zeros_like", DeviceType::kCUDA, FillKernel(0.0));

}  // namespace
}  // namespace ofl
