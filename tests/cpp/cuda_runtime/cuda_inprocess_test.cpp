// In-process groups on CUDA memory (CudaGroupMemory,
// oneflow_lite/core/cuda/cuda_device_context.h): the sum kernel
// gives the host Accumulate's bits, and the collectives of three virtual
// devices on one GPU move device memory to where a host oracle says.
// Skipped with "no CUDA device" without a GPU.
#include <gtest/gtest.h>

#include <numeric>
#include <random>
#include <thread>
#include <vector>

#include "oneflow_lite/core/cuda/cuda_check.h"
#include "oneflow_lite/core/cuda/cuda_device_context.h"
#include "oneflow_lite/core/reduce_sum.h"
#include "runtime/inprocess_communicator.h"
#include "tests/cpp/cuda_runtime/require_cuda.h"

namespace ofl {
namespace {

// The group memory of virtual devices on GPU 0.
GroupMemory Gpu0Memory() { return CudaGroupMemory({Device{DeviceType::kCUDA, 0}}).value(); }

template <typename T>
void* Upload(const std::vector<T>& values) {
  void* d = nullptr;
  OFL_CUDA_CHECK(cudaMalloc(&d, values.size() * sizeof(T) + 8));
  OFL_CUDA_CHECK(cudaMemcpy(d, values.data(), values.size() * sizeof(T), cudaMemcpyHostToDevice));
  return d;
}

template <typename T>
std::vector<T> Download(const void* d, size_t n) {
  std::vector<T> out(n);
  OFL_CUDA_CHECK(cudaMemcpy(out.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost));
  return out;
}

TEST(CudaInProcessTest, TheSumKernelGivesTheHostSumsBits) {
  OFL_SKIP_WITHOUT_CUDA();
  std::mt19937 gen(7);
  std::normal_distribution<float> dist;
  const int64_t n = 1000;
  std::vector<std::vector<float>> host(4, std::vector<float>(n));
  for (auto& v : host) {
    for (float& x : v) x = dist(gen);
  }
  std::vector<float> want(n);
  Accumulate(want.data(), host[0].data(), {host[1].data(), host[2].data(), host[3].data()}, n,
             DataType::kFloat32);
  std::vector<void*> dev;
  for (auto& v : host) dev.push_back(Upload(v));
  void* out = Upload(std::vector<float>(n, -1.0f));
  Gpu0Memory().accumulate(out, dev[0], {dev[1], dev[2], dev[3]}, n, DataType::kFloat32);
  EXPECT_EQ(Download<float>(out, n), want);  // bit for bit
  for (void* d : dev) OFL_CUDA_CHECK(cudaFree(d));
  OFL_CUDA_CHECK(cudaFree(out));
}

TEST(CudaInProcessTest, MoreSourcesThanOneLaunchTakesAreAllAdded) {
  OFL_SKIP_WITHOUT_CUDA();
  const int sources = 20;  // two launches
  std::vector<void*> dev;
  std::vector<const void*> srcs;
  for (int s = 0; s < sources; ++s) {
    dev.push_back(Upload(std::vector<int64_t>{s, 100 * s}));
    srcs.push_back(dev.back());
  }
  void* out = Upload(std::vector<int64_t>{1000, 2000});
  Gpu0Memory().accumulate(out, nullptr, srcs, 2, DataType::kInt64);
  // By hand: 1000 + (0 + 1 + ... + 19) = 1190; 2000 + 100 * 190 = 21000.
  EXPECT_EQ(Download<int64_t>(out, 2), (std::vector<int64_t>{1190, 21000}));
  for (void* d : dev) OFL_CUDA_CHECK(cudaFree(d));
  OFL_CUDA_CHECK(cudaFree(out));
}

TEST(CudaInProcessTest, ThreeVirtualDevicesOfOneGpuRunTheCollectives) {
  OFL_SKIP_WITHOUT_CUDA();
  InProcessGroup group(3, std::chrono::milliseconds(10000), Gpu0Memory());
  std::vector<std::vector<float>> reduced(3), gathered(3), swapped(3), received(3);
  auto rank_main = [&](int64_t r) {
    Communicator* c = group.Rank(r);
    std::vector<float> mine(5);
    std::iota(mine.begin(), mine.end(), 10.0f * r);  // rank r: 10r, 10r + 1, ...
    void* buffer = Upload(mine);
    ASSERT_TRUE(c->AllReduce(buffer, 5, DataType::kFloat32, "ar").ok());
    reduced[r] = Download<float>(buffer, 5);
    const int64_t counts[] = {1, 2, 3};  // rank r contributes its first counts[r] elements
    void* all = Upload(std::vector<float>(6, 0.0f));
    void* own = Upload(mine);
    ASSERT_TRUE(c->AllGather(own, all, counts, DataType::kFloat32, "ag").ok());
    gathered[r] = Download<float>(all, 6);
    const int64_t ones[] = {1, 1, 1};  // rank r sends element q to rank q
    void* got = Upload(std::vector<float>(3, 0.0f));
    ASSERT_TRUE(c->AllToAll(own, ones, got, ones, DataType::kFloat32, "a2a").ok());
    swapped[r] = Download<float>(got, 3);
    if (r == 0) {
      ASSERT_TRUE(c->Send(own, 5, DataType::kFloat32, 2, "p2p").ok());
    }
    if (r == 2) {
      void* in = Upload(std::vector<float>(5, 0.0f));
      ASSERT_TRUE(c->Recv(in, 5, DataType::kFloat32, 0, "p2p").ok());
      received[r] = Download<float>(in, 5);
      OFL_CUDA_CHECK(cudaFree(in));
    }
    for (void* d : {buffer, all, own, got}) OFL_CUDA_CHECK(cudaFree(d));
  };
  std::vector<std::thread> threads;
  for (int64_t r = 0; r < 3; ++r) threads.emplace_back(rank_main, r);
  for (auto& t : threads) t.join();
  // By hand: element i sums to (0 + 10 + 20) + 3i.
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(reduced[r], (std::vector<float>{30, 33, 36, 39, 42})) << r;
    EXPECT_EQ(gathered[r], (std::vector<float>{0, 10, 11, 20, 21, 22})) << r;
    // From rank q, element r of q's buffer: 10q + r.
    EXPECT_EQ(swapped[r], (std::vector<float>{0.0f + r, 10.0f + r, 20.0f + r})) << r;
  }
  EXPECT_EQ(received[2], (std::vector<float>{0, 1, 2, 3, 4}));
}

}  // namespace
}  // namespace ofl
