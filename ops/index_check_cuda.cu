#include "ops/cuda_device.cuh"
#include "ops/cuda_util.h"
#include "ops/index_check.h"
#include "ops/index_check_cuda.h"

namespace ofl::cuda {

namespace {

template <typename I>
__global__ void FindBadIndex(int64_t n, const I* ids, int64_t limit, int32_t launch,
                             CudaDeviceError* record) {
  OFL_KERNEL_LOOP(i, n) {
    const int64_t id = static_cast<int64_t>(ids[i]);
    if (id >= 0 && id < limit) continue;
    const int32_t owner = atomicCAS(&record->launch, -1, launch);
    if (owner != -1 && owner != launch) return;  // an earlier launch's error stands
    atomicMin(reinterpret_cast<long long*>(&record->flat_index), static_cast<long long>(i));
  }
}

template <typename I>
__global__ void CopyBadValue(const I* ids, int32_t launch, CudaDeviceError* record) {
  if (record->launch == launch) record->value = static_cast<int64_t>(ids[record->flat_index]);
}

template <typename I>
void Launch(const Tensor& t, int64_t limit, int32_t launch, CudaDeviceError* record,
            cudaStream_t stream) {
  const I* ids = static_cast<const I*>(t.raw());
  FindBadIndex<I>
      <<<BlocksFor(t.numel()), kThreads, 0, stream>>>(t.numel(), ids, limit, launch, record);
  OFL_CUDA_LAUNCH_CHECK();
  CopyBadValue<I><<<1, 1, 0, stream>>>(ids, launch, record);
  OFL_CUDA_LAUNCH_CHECK();
}

}  // namespace

void LaunchIndexCheck(KernelContext& k, const std::string& name, const Tensor& t, int64_t limit,
                      const std::string& limit_text, const std::vector<int64_t>& offset) {
  if (t.numel() == 0) return;
  auto* stream = dynamic_cast<CudaStream*>(k.stream);
  CHECK(stream != nullptr) << k.where() << ": a CUDA kernel was given a non-CUDA stream";
  const std::string where = k.where();
  const Shape shape = t.shape();
  const int32_t launch = stream->NoteDeviceCheck(
      [where, name, shape, limit, limit_text, offset](int64_t flat_index, int64_t value) {
        return InvalidArgument(
            where, ": ", IndexRangeText(name, shape, flat_index, value, limit, limit_text, offset));
      });
  OFL_DISPATCH_INDEX(t.dtype(), I,
                     Launch<I>(t, limit, launch, stream->device_error(), stream->handle()));
}

}  // namespace ofl::cuda
