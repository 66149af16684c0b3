// CPU kernel of clip_factor (clip_grad.cpp): one element. A NaN norm gives
// a NaN factor (PyTorch's clip_grad_norm_ too), so that the NaN reaches every
// gradient rather than being dropped by min(1, NaN) = 1.
#include "ops/kernel.h"
#include "ops/nan_compare.h"

namespace ofl {

namespace {

void ClipFactorKernel(KernelContext& k) {
  const double max_norm = k.attr().Get<double>("max_norm");
  OFL_DISPATCH_FLOAT(k.out(0).dtype(), T, {
    const double norm = static_cast<double>(k.in(0).data<T>()[0]);
    k.out(0).data<T>()[0] = static_cast<T>(NanMin(1.0, max_norm / (norm + 1e-6)));
  });
}

}  // namespace

OFL_REGISTER_KERNEL("clip_factor", DeviceType::kCPU, ClipFactorKernel);

}  // namespace ofl
