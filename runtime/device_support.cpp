#include "runtime/device_support.h"

#include <cstring>

#include "ops/array/strided_copy.h"
#include "runtime/reduce_sum.h"

#ifdef OFL_HAVE_CUDA
#include "oneflow_lite/core/cuda/cuda_check.h"
#include "oneflow_lite/core/cuda/cuda_device_context.h"
#include "runtime/cuda_memory.h"
#include "runtime/nccl_communicator.h"
#endif

namespace ofl {

Maybe<std::unique_ptr<DeviceContext>> MakeDeviceContext(const Device& device) {
#ifdef OFL_HAVE_CUDA
  if (device.type == DeviceType::kCUDA) return CreateCudaDeviceContext(device);
#endif
  return CreateDeviceContext(device);
}

void CopyBytesSync(const Device& device, void* destination, const void* source, int64_t bytes) {
  if (bytes == 0) return;
#ifdef OFL_HAVE_CUDA
  if (device.type == DeviceType::kCUDA) {
    // cudaMemcpy may return before a device-to-device copy ends: wait for it.
    CudaDeviceGuard guard(CudaOrdinalOf(device));
    OFL_CUDA_CHECK(cudaMemcpyAsync(destination, source, static_cast<size_t>(bytes),
                                   cudaMemcpyDefault, nullptr));
    OFL_CUDA_CHECK(cudaStreamSynchronize(nullptr));
    return;
  }
#endif
  CHECK(device.is_host()) << "a copy on " << device << " in a build without its backend";
  std::memcpy(destination, source, static_cast<size_t>(bytes));
}

void FillBytesSync(const Device& device, void* destination, int value, int64_t bytes) {
  if (bytes == 0) return;
#ifdef OFL_HAVE_CUDA
  if (device.type == DeviceType::kCUDA) {
    CudaDeviceGuard guard(CudaOrdinalOf(device));  // cudaMemset may return early too
    OFL_CUDA_CHECK(cudaMemsetAsync(destination, value, static_cast<size_t>(bytes), nullptr));
    OFL_CUDA_CHECK(cudaStreamSynchronize(nullptr));
    return;
  }
#endif
  CHECK(device.is_host()) << "a fill on " << device << " in a build without its backend";
  std::memset(destination, value, static_cast<size_t>(bytes));
}

Tensor CloneToHost(const Tensor& tensor) {
  if (tensor.device().is_host()) return tensor.Clone();
  Tensor host(tensor.shape(), tensor.dtype());
  CopyBytesSync(tensor.device(), host.raw(), tensor.raw(), tensor.nbytes());
  return host;
}

int CudaDevicesVisible() {
#ifdef OFL_HAVE_CUDA
  return CudaDeviceCount();
#else
  return 0;
#endif
}

Status FinishStream(Stream* stream) {
#ifdef OFL_HAVE_CUDA
  if (auto* cuda = dynamic_cast<CudaStream*>(stream)) return cuda->TakeDeviceError();
#endif
  stream->Synchronize();
  return Status::OK();
}

void CopyBoxOn(Stream* stream, const Tensor& src, const std::vector<int64_t>& src_start,
               Tensor* dst, const std::vector<int64_t>& dst_start, const Shape& box) {
#ifdef OFL_HAVE_CUDA
  if (stream->device().type == DeviceType::kCUDA) {
    return CudaCopyBox(stream, src, src_start, dst, dst_start, box);
  }
#endif
  CHECK(stream->device().is_host())
      << "a copy on " << stream->device() << " in a build without its backend";
  CopyBox(src, src_start, dst, dst_start, box);
}

void AccumulateOn(Stream* stream, void* dst, const void* src, int64_t n, DataType dtype) {
#ifdef OFL_HAVE_CUDA
  if (stream->device().type == DeviceType::kCUDA) {
    return CudaAccumulateOn(stream, dst, src, n, dtype);
  }
#endif
  CHECK(stream->device().is_host())
      << "a sum on " << stream->device() << " in a build without its backend";
  Accumulate(dst, nullptr, {src}, n, dtype);
}

Maybe<InProcessMemory> DeviceGroupMemory(const std::vector<Device>& devices) {
  CHECK(!devices.empty());
  const Device& first = devices.front();
  if (first.is_host()) return HostMemory();
#ifdef OFL_HAVE_CUDA
  if (first.type == DeviceType::kCUDA) {
    if (CudaDeviceCount() == 0) return Unimplemented(first, ": no CUDA device");
    const int ordinal = CudaOrdinalOf(first);
    for (const Device& d : devices) {
      OFL_ENSURE(CudaOrdinalOf(d) == ordinal, "an in-process boxing group has ", first, " on GPU ",
                 ordinal, " and ", d, " on GPU ", CudaOrdinalOf(d),
                 ": the in-process CUDA group needs one GPU (run one process "
                 "per GPU)");
    }
    return CudaMemory(ordinal);
  }
#endif
  return Unimplemented(first, ": this build has no ", DeviceTypeName(first.type), " backend");
}

Maybe<std::unique_ptr<Communicator>> MakeDeviceCommunicator(
    TcpStore* store, const std::string& group, const std::vector<int64_t>& members,
    int64_t world_rank, const Device& device, std::chrono::milliseconds timeout) {
  CHECK(!device.is_host()) << "host groups across processes use Gloo";
#ifdef OFL_HAVE_CUDA
  if (device.type == DeviceType::kCUDA) {
    if (CudaDeviceCount() == 0) {  // as Runtime::Create names it
      return Unimplemented("rank ", world_rank, ": ", device, ": no CUDA device");
    }
    NcclOptions options;
    options.timeout = timeout;
    OFL_ASSIGN_OR_RETURN(
        std::unique_ptr<NcclCommunicator> nccl,
        NcclCommunicator::Create(store, group, members, world_rank, device, options));
    return std::unique_ptr<Communicator>(std::move(nccl));
  }
#else
  (void)store, (void)group, (void)members, (void)world_rank, (void)timeout;
#endif
  return Unimplemented(device, ": this build has no ", DeviceTypeName(device.type), " backend");
}

}  // namespace ofl
