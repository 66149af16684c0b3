// CUDA kernels of reduce_sum and reduce_mean, and cuda::ReduceSumTo
// (reduce_sum_cuda.h) which they and sum_to share. x's axes are merged into
// alternating kept / reduced groups (size-1 axes dropped) as the CPU's
// math::ReduceSumTo does; an output element's x offset is its kept groups'
// offset plus, for each of its `per_out` reduced elements, the reduced
// groups' offset.
#include "ops/cuda_device.cuh"
#include "ops/cuda_util.h"
#include "ops/math/reduce_plan.h"
#include "ops/math/reduce_sum_cuda.h"

namespace ofl {

namespace cuda {

namespace {

// Above this many elements per output, a block (not a thread) sums one output.
constexpr int64_t kBlockReduceMin = 1024;

struct ReduceIndex {
  Dims kept_dims, kept_strides;        // kept groups of x, outer first
  Dims reduced_dims, reduced_strides;  // reduced groups of x, outer first
};

template <typename T>
__global__ void ReducePerThread(int64_t num_out, int64_t per_out, ReduceIndex index, const T* x,
                                double scale, T* out) {
  OFL_KERNEL_LOOP(o, num_out) {
    const T* base = x + OffsetOf(o, index.kept_dims, index.kept_strides);
    double s = 0;
    for (int64_t r = 0; r < per_out; ++r) {
      s += static_cast<double>(Load(base[OffsetOf(r, index.reduced_dims, index.reduced_strides)]));
    }
    out[o] = Store<T>(static_cast<Compute<T>>(s * scale));
  }
}

template <typename T>
__global__ void ReducePerBlock(int64_t num_out, int64_t per_out, ReduceIndex index, const T* x,
                               double scale, T* out) {
  __shared__ double scratch[32];
  for (int64_t o = blockIdx.x; o < num_out; o += gridDim.x) {
    const T* base = x + OffsetOf(o, index.kept_dims, index.kept_strides);
    double s = 0;
    for (int64_t r = threadIdx.x; r < per_out; r += blockDim.x) {
      s += static_cast<double>(Load(base[OffsetOf(r, index.reduced_dims, index.reduced_strides)]));
    }
    s = BlockReduce(s, SumOp(), scratch);
    if (threadIdx.x == 0) out[o] = Store<T>(static_cast<Compute<T>>(s * scale));
  }
}

}  // namespace

template <typename T>
void ReduceSumTo(const T* x, const Shape& x_shape, const Shape& kept, T* out, double scale,
                 cudaStream_t stream) {
  CHECK_EQ(x_shape.ndim(), kept.ndim());
  const int64_t num_out = kept.NumElements();
  const int64_t num_x = x_shape.NumElements();
  if (num_out == 0) return;
  if (num_x == 0) {
    OFL_CUDA_CHECK(cudaMemsetAsync(out, 0, num_out * sizeof(T), stream));
    return;
  }
  // Merge the axes into alternating kept / reduced groups.
  std::vector<int64_t> dims;
  std::vector<bool> reduced;
  for (int64_t a = 0; a < x_shape.ndim(); ++a) {
    CHECK(kept[a] == 1 || kept[a] == x_shape[a]) << kept << " is not reducible from " << x_shape;
    if (x_shape[a] == 1) continue;
    const bool r = kept[a] == 1;
    if (!dims.empty() && reduced.back() == r) {
      dims.back() *= x_shape[a];
    } else {
      dims.push_back(x_shape[a]);
      reduced.push_back(r);
    }
  }
  const int64_t g = static_cast<int64_t>(dims.size());
  std::vector<int64_t> stride(g, 1);
  for (int64_t i = g - 2; i >= 0; --i) stride[i] = stride[i + 1] * dims[i + 1];
  std::vector<int64_t> kd, ks, rd, rs;
  for (int64_t i = 0; i < g; ++i) {
    (reduced[i] ? rd : kd).push_back(dims[i]);
    (reduced[i] ? rs : ks).push_back(stride[i]);
  }
  const ReduceIndex index{ToDims(kd), ToDims(ks), ToDims(rd), ToDims(rs)};
  const int64_t per_out = num_x / num_out;
  if (per_out >= kBlockReduceMin) {
    const unsigned blocks = static_cast<unsigned>(std::min<int64_t>(num_out, 65536));
    ReducePerBlock<T><<<blocks, kThreads, 0, stream>>>(num_out, per_out, index, x, scale, out);
  } else {
    ReducePerThread<T>
        <<<BlocksFor(num_out), kThreads, 0, stream>>>(num_out, per_out, index, x, scale, out);
  }
  OFL_CUDA_LAUNCH_CHECK();
}

template void ReduceSumTo<float>(const float*, const Shape&, const Shape&, float*, double,
                                 cudaStream_t);
template void ReduceSumTo<double>(const double*, const Shape&, const Shape&, double*, double,
                                  cudaStream_t);
template void ReduceSumTo<__nv_bfloat16>(const __nv_bfloat16*, const Shape&, const Shape&,
                                         __nv_bfloat16*, double, cudaStream_t);

}  // namespace cuda

namespace {

void ReduceKernel(KernelContext& kc, bool is_mean) {
  cuda::DeviceGuard guard(kc.device.index);
  const cudaStream_t stream = cuda::StreamOf(kc);
  const Tensor& x = kc.in(0);
  Tensor& out = kc.out(0);
  const ReducePlan plan = PlanReduce(kc, is_mean);
  OFL_CUDA_DISPATCH_FLOAT(out.dtype(), T,
                          cuda::ReduceSumTo<T>(cuda::Data<T>(x), x.shape(), plan.kept,
                                               cuda::Data<T>(out), plan.scale, stream));
}

OFL_REGISTER_KERNEL("reduce_sum", DeviceType::kCUDA,
                    [](KernelContext& kc) { ReduceKernel(kc, /*is_mean=*/false); });
OFL_REGISTER_KERNEL("reduce_mean", DeviceType::kCUDA,
                    [](KernelContext& kc) { ReduceKernel(kc, /*is_mean=*/true); });

}  // namespace
}  // namespace ofl
