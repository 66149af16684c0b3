// CudaDeviceGuard, CudaEvent and CudaDeviceStream (cuda_device_context.h).
#include <utility>
#include <vector>

#include "oneflow_lite/core/cuda/cuda_check.h"
#include "oneflow_lite/core/cuda/cuda_device_context.h"
#include "oneflow_lite/core/cuda/stream_caches.h"

namespace ofl {

CudaDeviceGuard::CudaDeviceGuard(int ordinal) {
  OFL_CUDA_CHECK(cudaGetDevice(&previous_));
  if (previous_ != ordinal) {
    OFL_CUDA_CHECK(cudaSetDevice(ordinal));
    changed_ = true;
  }
}

CudaDeviceGuard::~CudaDeviceGuard() {
  if (changed_) OFL_CUDA_CHECK(cudaSetDevice(previous_));
}

CudaEvent::CudaEvent(int ordinal) : ordinal_(ordinal) {
  CudaDeviceGuard guard(ordinal_);
  OFL_CUDA_CHECK(cudaEventCreateWithFlags(&event_, cudaEventDisableTiming));
}

CudaEvent::~CudaEvent() {
  if (event_ != nullptr) (void)cudaEventDestroy(event_);
}

void CudaEvent::Record(Stream* stream) {
  CudaDeviceGuard guard(ordinal_);
  OFL_CUDA_CHECK(cudaEventRecord(event_, CudaStreamOf(stream)));
}

bool CudaEvent::Query() const {
  const cudaError_t status = cudaEventQuery(event_);
  if (status == cudaErrorNotReady) {
    (void)cudaGetLastError();  // not an error: clear it
    return false;
  }
  OFL_CUDA_CHECK(status);
  return true;
}

void CudaEvent::Synchronize() const { OFL_CUDA_CHECK(cudaEventSynchronize(event_)); }

CudaDeviceStream::CudaDeviceStream(Device device, int ordinal)
    : device_(device), ordinal_(ordinal) {
  CHECK(device.type == DeviceType::kCUDA) << "a CUDA stream on " << device;
  CudaDeviceGuard guard(ordinal_);
  OFL_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  OFL_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&device_error_), sizeof(CudaDeviceError)));
  ResetDeviceError();
  OFL_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

namespace {

std::vector<CudaStreamReleaseFn>& StreamReleases() {
  static auto* releases = new std::vector<CudaStreamReleaseFn>;  // lives for the process
  return *releases;
}

}  // namespace

bool RegisterCudaStreamRelease(CudaStreamReleaseFn release) {
  StreamReleases().push_back(release);  // static initialisation: one thread
  return true;
}

int64_t ReleaseCudaStreamCaches(cudaStream_t stream) {
  int64_t released = 0;
  for (CudaStreamReleaseFn release : StreamReleases()) released += release(stream);
  return released;
}

CudaDeviceStream::~CudaDeviceStream() {
  CudaDeviceGuard guard(ordinal_);
  (void)cudaStreamSynchronize(stream_);
  (void)ReleaseCudaStreamCaches(stream_);
  (void)cudaFree(device_error_);
  (void)cudaStreamDestroy(stream_);
}

void CudaDeviceStream::BindToThread() { OFL_CUDA_CHECK(cudaSetDevice(ordinal_)); }

void CudaDeviceStream::Enqueue(std::function<void()> work) {
  auto* heap = new std::function<void()>(std::move(work));
  auto run = [](void* data) {
    std::unique_ptr<std::function<void()>> owned(static_cast<std::function<void()>*>(data));
    (*owned)();
  };
  CudaDeviceGuard guard(ordinal_);
  OFL_CUDA_CHECK(cudaLaunchHostFunc(stream_, run, heap));
}

void CudaDeviceStream::Wait(const Event& event) {
  const auto* cuda = dynamic_cast<const CudaEvent*>(&event);
  CHECK(cuda != nullptr) << device_ << ": a CUDA stream waits only on a CUDA event";
  OFL_CUDA_CHECK(cudaStreamWaitEvent(stream_, cuda->handle(), 0));
}

void CudaDeviceStream::Synchronize() { OFL_CUDA_CHECK(cudaStreamSynchronize(stream_)); }

int32_t CudaDeviceStream::NoteDeviceCheck(std::function<Status(int64_t, int64_t)> report) {
  notes_.push_back(std::move(report));
  return static_cast<int32_t>(notes_.size() - 1);
}

void CudaDeviceStream::ResetDeviceError() {
  static const CudaDeviceError kClean{};
  CudaDeviceGuard guard(ordinal_);
  OFL_CUDA_CHECK(cudaMemcpyAsync(device_error_, &kClean, sizeof(CudaDeviceError),
                                 cudaMemcpyHostToDevice, stream_));
}

Status CudaDeviceStream::TakeDeviceError() {
  CudaDeviceGuard guard(ordinal_);
  CudaDeviceError record;
  OFL_CUDA_CHECK(cudaMemcpyAsync(&record, device_error_, sizeof(CudaDeviceError),
                                 cudaMemcpyDeviceToHost, stream_));
  OFL_CUDA_CHECK(cudaStreamSynchronize(stream_));
  Status status = Status::OK();
  if (record.launch >= 0) {
    CHECK_LT(static_cast<size_t>(record.launch), notes_.size())
        << device_ << ": a kernel reported launch " << record.launch << " that was never noted";
    status = notes_[record.launch](record.flat_index, record.value);
    ResetDeviceError();
    OFL_CUDA_CHECK(cudaStreamSynchronize(stream_));
  }
  notes_.clear();
  return status;
}

}  // namespace ofl
