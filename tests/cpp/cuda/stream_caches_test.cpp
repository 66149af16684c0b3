// Per-stream handle caches die with their stream (core/cuda/stream_caches.h):
// the cuDNN handle and the cuBLASLt workspace ops/cuda_util.h keeps for a
// stream are released by the stream's destructor, once, and a second release
// finds nothing. Skipped with "no CUDA device" without a GPU.
#include "oneflow_lite/core/cuda/stream_caches.h"

#include "oneflow_lite/core/cuda/cuda_device_context.h"
#include "ops/cuda_util.h"
#include "tests/cpp/cuda/cuda_op_check.h"

namespace ofl::cuda_test {
namespace {

class StreamCaches : public CudaOpTest {};

// Creates the two per-stream entries of `stream` (device cuda:0).
void UseHandles(cudaStream_t stream) {
  (void)cuda::CudnnHandle(0, stream);
  size_t bytes = 0;
  EXPECT_NE(cuda::CublasLtWorkspace(0, stream, &bytes), nullptr);
  EXPECT_GT(bytes, 0u);
}

TEST_F(StreamCaches, AReleaseFreesTheStreamsHandleAndWorkspaceOnce) {
  auto context = CreateCudaDeviceContext(Device{DeviceType::kCUDA, 0}).value();
  std::unique_ptr<Stream> stream = context->CreateStream();
  const cudaStream_t handle = CudaStreamOf(stream.get());
  UseHandles(handle);
  EXPECT_EQ(ReleaseCudaStreamCaches(handle), 2);  // the cuDNN handle and the workspace
  EXPECT_EQ(ReleaseCudaStreamCaches(handle), 0);
  UseHandles(handle);  // made anew after a release
  EXPECT_EQ(ReleaseCudaStreamCaches(handle), 2);
}

TEST_F(StreamCaches, AStreamsDestructorReleasesItsEntries) {
  auto context = CreateCudaDeviceContext(Device{DeviceType::kCUDA, 0}).value();
  std::unique_ptr<Stream> keep = context->CreateStream();  // another stream's entries stay
  const cudaStream_t kept = CudaStreamOf(keep.get());
  UseHandles(kept);
  std::unique_ptr<Stream> stream = context->CreateStream();
  const cudaStream_t handle = CudaStreamOf(stream.get());
  UseHandles(handle);
  stream.reset();
  EXPECT_EQ(ReleaseCudaStreamCaches(handle), 0);  // already released by the destructor
  EXPECT_EQ(ReleaseCudaStreamCaches(kept), 2);
}

}  // namespace
}  // namespace ofl::cuda_test
