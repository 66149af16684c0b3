// The NCCL communicator with one rank (runtime/nccl_communicator.h): each
// collective moves the bytes it should on the GPU, the id goes through the
// store, and a call that cannot complete fails by name and aborts the
// communicator. Skipped with "no CUDA device" without a GPU; the refusal of
// a machine without one runs everywhere.
#include "runtime/nccl_communicator.h"

#include <gtest/gtest.h>

#include <vector>

#include "oneflow_lite/core/cuda/cuda_check.h"
#include "tests/cpp/cuda_runtime/require_cuda.h"

namespace ofl {
namespace {

using std::chrono::milliseconds;

class NcclCommunicatorTest : public testing::Test {
 protected:
  void SetUp() override {
    server_ = TcpStoreServer::Start("127.0.0.1", 0).value();
    store_ = TcpStore::Connect("127.0.0.1", server_->port(), milliseconds(5000)).value();
  }
  std::unique_ptr<NcclCommunicator> One(milliseconds timeout = milliseconds(10000)) {
    NcclOptions options;
    options.timeout = timeout;
    return NcclCommunicator::Create(store_.get(), "g" + std::to_string(groups_++), {0}, 0,
                                    Device{DeviceType::kCUDA, 0}, options)
        .value();
  }
  // A device buffer holding `values`, and reading one back.
  float* Upload(const std::vector<float>& values) {
    float* d = nullptr;
    OFL_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&d), values.size() * sizeof(float) + 4));
    OFL_CUDA_CHECK(
        cudaMemcpy(d, values.data(), values.size() * sizeof(float), cudaMemcpyHostToDevice));
    buffers_.push_back(d);
    return d;
  }
  std::vector<float> Download(const float* d, size_t n) {
    std::vector<float> out(n);
    OFL_CUDA_CHECK(cudaMemcpy(out.data(), d, n * sizeof(float), cudaMemcpyDeviceToHost));
    return out;
  }
  void TearDown() override {
    for (float* d : buffers_) (void)cudaFree(d);
  }

  std::unique_ptr<TcpStoreServer> server_;
  std::unique_ptr<TcpStore> store_;
  std::vector<float*> buffers_;
  int groups_ = 0;
};

TEST_F(NcclCommunicatorTest, WithoutADeviceCreationIsRefusedByName) {
  if (CudaDeviceCount() > 0) GTEST_SKIP() << "a CUDA device exists here";
  auto c = NcclCommunicator::Create(store_.get(), "g", {0}, 0, Device{DeviceType::kCUDA, 0});
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().message(), "cuda:0: no CUDA device");
}

TEST_F(NcclCommunicatorTest, ACpuDeviceIsRefusedByName) {
  auto c = NcclCommunicator::Create(store_.get(), "g", {0}, 0, Device{});
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().message(), "nccl group 'g': cpu:0 is not a CUDA device");
}

TEST_F(NcclCommunicatorTest, EveryCollectiveOfOneRankKeepsItsData) {
  OFL_SKIP_WITHOUT_CUDA();
  auto comm = One();
  EXPECT_EQ(comm->rank(), 0);
  EXPECT_EQ(comm->size(), 1);
  const std::vector<float> x = {1.5f, -2.0f, 3.25f, 7.0f, 0.5f};  // one rank: sum = itself
  float* a = Upload(x);
  ASSERT_TRUE(comm->AllReduce(a, 5, DataType::kFloat32, "ar").ok());
  EXPECT_EQ(Download(a, 5), x);
  float* out = Upload(std::vector<float>(5, 0.0f));
  ASSERT_TRUE(comm->ReduceScatter(a, out, 5, DataType::kFloat32, "rs").ok());
  EXPECT_EQ(Download(out, 5), x);
  float* gathered = Upload(std::vector<float>(5, 0.0f));
  const int64_t counts[] = {5};
  ASSERT_TRUE(comm->AllGather(a, gathered, counts, DataType::kFloat32, "ag").ok());
  EXPECT_EQ(Download(gathered, 5), x);
  float* swapped = Upload(std::vector<float>(5, 0.0f));
  ASSERT_TRUE(comm->AllToAll(a, counts, swapped, counts, DataType::kFloat32, "a2a").ok());
  EXPECT_EQ(Download(swapped, 5), x);
  ASSERT_TRUE(comm->Broadcast(a, 5, DataType::kFloat32, 0, "bc").ok());
  EXPECT_EQ(Download(a, 5), x);
  EXPECT_EQ(comm->bytes_sent(), 0);  // nothing left this rank for another
}

TEST_F(NcclCommunicatorTest, AbortFailsTheNextCallByNameAndEveryLaterOne) {
  OFL_SKIP_WITHOUT_CUDA();
  auto comm = One();
  float* a = Upload({1.0f, 2.0f});
  comm->Abort("rank 3 was lost");
  Status s = comm->AllReduce(a, 2, DataType::kFloat32, "grad");
  EXPECT_EQ(s.message(),
            "rank 0: nccl all_reduce 'grad': the communicator was aborted: rank 3 was lost");
  EXPECT_FALSE(comm->Broadcast(a, 2, DataType::kFloat32, 0, "w").ok());
}

TEST_F(NcclCommunicatorTest, ASendNobodyReceivesFailsByNameAndAborts) {
  OFL_SKIP_WITHOUT_CUDA();
  auto comm = One(milliseconds(500));
  float* a = Upload({1.0f, 2.0f});
  Status s = comm->Send(a, 2, DataType::kFloat32, 0, "act");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message().rfind("rank 0: nccl send 'act': ", 0), 0u) << s.message();
  Status later = comm->AllReduce(a, 2, DataType::kFloat32, "grad");
  EXPECT_EQ(
      later.message().rfind("rank 0: nccl all_reduce 'grad': the communicator was aborted", 0), 0u)
      << later.message();
}

}  // namespace
}  // namespace ofl
