// CPU kernels of reduce_sum and reduce_mean (reduce.cpp), over
// math::ReduceSumTo. reduce_mean divides by the count of its local tensor,
// which is why reduce.cpp declares no split of a reduced axis for it.
#include "ops/kernel.h"
#include "ops/math/axes.h"
#include "ops/math/broadcast_loops.h"

namespace ofl {

namespace {

void ReduceKernel(KernelContext& kc, bool is_mean) {
  const Tensor& x = kc.in(0);
  Tensor& out = kc.out(0);
  std::vector<int64_t> axes = math::NormalizedAxesUnchecked(
      kc.attr().Get<std::vector<int64_t>>("axes"), x.shape().ndim());
  std::vector<int64_t> kept = x.shape().dims();
  int64_t count = 1;
  for (int64_t a = 0; a < x.shape().ndim(); ++a) {
    if (axes.empty() || std::binary_search(axes.begin(), axes.end(), a)) {
      count *= kept[a];
      kept[a] = 1;
    }
  }
  const double scale = is_mean ? 1.0 / static_cast<double>(count) : 1.0;
  OFL_DISPATCH_FLOAT(out.dtype(), T,
                     math::ReduceSumTo<T>(x.data<T>(), x.shape(), Shape(kept), out.data<T>(),
                                          scale));
}

OFL_REGISTER_KERNEL("reduce_sum", DeviceType::kCPU,
                    [](KernelContext& kc) { ReduceKernel(kc, /*is_mean=*/false); });
OFL_REGISTER_KERNEL("reduce_mean", DeviceType::kCPU,
                    [](KernelContext& kc) { ReduceKernel(kc, /*is_mean=*/true); });

}  // namespace
}  // namespace ofl
