#include "runtime/device_support.h"

#include <cstring>

#ifdef OFL_HAVE_CUDA
#include "oneflow_lite/core/cuda/cuda_check.h"
#include "oneflow_lite/core/cuda/cuda_device_context.h"
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

}  // namespace ofl
