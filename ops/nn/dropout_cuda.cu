// CUDA kernel of dropout (dropout.cpp registers the op). Element i of the
// local shard is element j of local row r (a row runs along the last axis);
// its logical index is the row's first logical index (from
// KernelContext::logical_shape and logical_offset, as dropout_cpu.cpp's
// LogicalIndexer) plus j, and its keep decision is the Philox draw for
// (seed, iteration, logical index) (philox.cuh, core/random.h's stream), so
// masks match the CPU kernel's bit for bit under every sharding. bfloat16
// stores the scale rounded and multiplies in float.
#include "ops/cuda_device.cuh"
#include "ops/cuda_util.h"
#include "ops/nn/philox.cuh"

namespace ofl {

namespace {

struct RowIndex {
  cuda::Dims local;    // local shape
  cuda::Dims offset;   // logical offset of the shard
  cuda::Dims strides;  // logical row-major strides
  int64_t length = 1;  // elements per row
};

// The logical index of the first element of local row `row`.
__device__ int64_t RowStart(const RowIndex& x, int64_t row) {
  const int ndim = x.local.n;
  if (ndim == 0) return 0;
  int64_t index = x.offset.v[ndim - 1];
  for (int d = ndim - 2; d >= 0; --d) {
    index += (row % x.local.v[d] + x.offset.v[d]) * x.strides.v[d];
    row /= x.local.v[d];
  }
  return index;
}

template <typename T>
__global__ void DropoutForward(int64_t n, RowIndex index, uint64_t seed, uint64_t stream,
                               double rate, cuda::Compute<T> scale, const T* x, T* y, T* mask) {
  OFL_KERNEL_LOOP(i, n) {
    const int64_t row = i / index.length, j = i % index.length;
    const uint64_t logical = static_cast<uint64_t>(RowStart(index, row) + j);
    const bool keep = static_cast<double>(cuda::UniformFloat(seed, stream, logical)) >= rate;
    const T m = cuda::Store<T>(keep ? scale : cuda::Compute<T>(0));
    mask[i] = m;
    y[i] = cuda::Store<T>(cuda::Load(x[i]) * cuda::Load(m));
  }
}

RowIndex MakeRowIndex(const Shape& local, const Shape& logical,
                      const std::vector<int64_t>& offset) {
  CHECK_EQ(logical.ndim(), local.ndim())
      << "dropout: logical shape " << logical << " does not match the local shape " << local;
  CHECK_EQ(static_cast<int64_t>(offset.size()), local.ndim()) << "dropout: bad logical offset";
  std::vector<int64_t> strides(local.ndim(), 1);
  for (int64_t d = local.ndim() - 2; d >= 0; --d) strides[d] = strides[d + 1] * logical[d + 1];
  RowIndex index;
  index.local = cuda::ToDims(local.dims());
  index.offset = cuda::ToDims(offset);
  index.strides = cuda::ToDims(strides);
  index.length = local.ndim() == 0 ? 1 : local[local.ndim() - 1];
  return index;
}

void DropoutKernel(KernelContext& k) {
  cuda::DeviceGuard guard(k.device.index);
  const cudaStream_t stream = cuda::StreamOf(k);
  const double rate = k.attr().Get<double>("rate");
  const uint64_t seed = static_cast<uint64_t>(k.attr().Get<int64_t>("seed"));
  const Tensor& x = k.in(0);
  const RowIndex index = MakeRowIndex(x.shape(), k.logical_shape, k.logical_offset);
  const int64_t n = x.numel();
  if (index.length == 0 || n == 0) return;
  OFL_CUDA_DISPATCH_FLOAT(x.dtype(), T, {
    DropoutForward<T><<<cuda::BlocksFor(n), cuda::kThreads, 0, stream>>>(
        n, index, seed, static_cast<uint64_t>(k.iteration), rate,
        static_cast<cuda::Compute<T>>(1.0 / (1.0 - rate)), cuda::Data<T>(x),
        cuda::Data<T>(k.out(0)), cuda::Data<T>(k.out(1)));
    OFL_CUDA_LAUNCH_CHECK();
  });
}

}  // namespace

OFL_REGISTER_KERNEL("dropout", DeviceType::kCUDA, DropoutKernel);

}  // namespace ofl
