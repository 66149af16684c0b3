// CPU kernels of reduce_sum and reduce_mean (reduce.cpp): math::ReduceSumTo
// of the plan in reduce_plan.h. reduce_mean divides by the count of its
// logical input, so a split of a reduced axis gives a partial sum (P).
#include "ops/kernel.h"
#include "ops/math/broadcast_loops.h"
#include "ops/math/reduce_plan.h"

namespace ofl {

namespace {

void ReduceKernel(KernelContext& kc, bool is_mean) {
  const Tensor& x = kc.in(0);
  Tensor& out = kc.out(0);
  const ReducePlan plan = PlanReduce(kc, is_mean);
  OFL_DISPATCH_FLOAT(
      out.dtype(), T,
      math::ReduceSumTo<T>(x.data<T>(), x.shape(), plan.kept, out.data<T>(), plan.scale));
}

OFL_REGISTER_KERNEL("reduce_sum", DeviceType::kCPU,
                    [](KernelContext& kc) { ReduceKernel(kc, /*is_mean=*/false); });
OFL_REGISTER_KERNEL("reduce_mean", DeviceType::kCPU,
                    [](KernelContext& kc) { ReduceKernel(kc, /*is_mean=*/true); });

}  // namespace
}  // namespace ofl
