// The CUDA backend of the device seam (oneflow_lite/core/cuda): streams,
// events, the caching allocator, the device-side error record, and a Runtime
// that feeds and fetches through a GPU. Every test that needs a GPU skips
// with "no CUDA device" without one; the refusal tests run everywhere.
#include <gtest/gtest.h>

#include <future>
#include <numeric>
#include <vector>

#include "oneflow_lite/core/cuda/cuda_check.h"
#include "oneflow_lite/core/cuda/cuda_device_context.h"
#include "oneflow_lite/core/device_backend.h"
#include "runtime/runtime.h"
#include "tests/cpp/cuda_runtime/require_cuda.h"
#include "tests/cpp/runtime/plan_maker.h"

namespace ofl {
namespace {

const Device kCuda0{DeviceType::kCUDA, 0};

std::unique_ptr<DeviceContext> Context(const Device& device = kCuda0) {
  return CreateCudaDeviceContext(device).value();
}

TEST(CudaBackendTest, WithoutADeviceTheContextIsRefusedByName) {
  if (CudaDeviceCount() > 0) GTEST_SKIP() << "a CUDA device exists here";
  Maybe<std::unique_ptr<DeviceContext>> c = CreateDeviceContext(Device{DeviceType::kCUDA, 3});
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().message(), "cuda:3: no CUDA device");
}

TEST(CudaBackendTest, ACpuDeviceIsNotACudaContext) {
  Maybe<std::unique_ptr<DeviceContext>> c = CreateCudaDeviceContext(Device{});
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().message(), "cpu:0: not a CUDA device");
}

TEST(CudaBackendTest, CopiesRoundTripThroughTheDeviceOnAStream) {
  OFL_SKIP_WITHOUT_CUDA();
  auto context = Context();
  std::unique_ptr<Stream> stream = context->CreateStream();
  std::vector<float> host(1000), back(1000, -1.0f);
  std::iota(host.begin(), host.end(), 0.5f);
  Tensor device = context->allocator()->NewTensor(Shape({1000}), DataType::kFloat32).value();
  EXPECT_EQ(device.device(), kCuda0);
  context->Fill(stream.get(), device.raw(), 0, 4000);
  context->Copy(stream.get(), device.raw(), host.data(), 4000);
  context->Copy(stream.get(), back.data(), device.raw(), 4000);
  stream->Synchronize();
  EXPECT_EQ(back, host);
}

TEST(CudaBackendTest, AWaitOrdersTwoStreamsAndQueryFollowsTheRecordedPoint) {
  OFL_SKIP_WITHOUT_CUDA();
  auto context = Context();
  std::unique_ptr<Stream> a = context->CreateStream(), b = context->CreateStream();
  std::unique_ptr<Event> event = context->CreateEvent();
  EXPECT_TRUE(event->Query());  // never recorded
  std::promise<void> gate;
  std::shared_future<void> opened = gate.get_future().share();
  std::vector<int> order;
  a->Enqueue([opened, &order] {
    opened.wait();
    order.push_back(1);
  });
  event->Record(a.get());
  b->Wait(*event);
  b->Enqueue([&order] { order.push_back(2); });
  EXPECT_FALSE(event->Query());
  gate.set_value();
  b->Synchronize();
  EXPECT_TRUE(event->Query());
  EXPECT_EQ(order, (std::vector<int>{1, 2}));
}

TEST(CudaBackendTest, AllocatorCountsLiveAndPeakAndReusesOnOneStream) {
  OFL_SKIP_WITHOUT_CUDA();
  auto context = Context();
  auto* allocator = static_cast<CudaDeviceContext*>(context.get())->cuda_allocator();
  void* first = nullptr;
  {
    std::shared_ptr<void> a = allocator->AllocateShared(3 << 20).value();
    first = a.get();
    EXPECT_EQ(allocator->live_bytes(), 3 << 20);
  }
  EXPECT_EQ(allocator->live_bytes(), 0);
  EXPECT_EQ(allocator->peak_bytes(), 3 << 20);
  std::shared_ptr<void> b = allocator->AllocateShared((3 << 20) - 100).value();
  EXPECT_EQ(b.get(), first);
  EXPECT_EQ(allocator->backend_allocations(), 1);
}

TEST(CudaBackendTest, OutOfMemoryIsAnErrorNamingDeviceAndBytesAndNotSticky) {
  OFL_SKIP_WITHOUT_CUDA();
  auto context = Context();
  const int64_t huge = int64_t{1} << 50;  // 1 PiB
  Maybe<std::shared_ptr<void>> none = context->allocator()->AllocateShared(huge);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(
      none.status().message().rfind("cuda:0: out of memory allocating 1125899906842624 bytes", 0),
      0u)
      << none.status().message();
  EXPECT_TRUE(context->allocator()->AllocateShared(1024).ok());  // the device still works
}

TEST(CudaBackendTest, TheDeviceErrorRecordGivesTheNotedLaunchsError) {
  OFL_SKIP_WITHOUT_CUDA();
  auto context = Context();
  std::unique_ptr<Stream> s = context->CreateStream();
  auto* stream = static_cast<CudaStream*>(s.get());
  stream->NoteDeviceCheck([](int64_t, int64_t) { return Status::OK(); });
  const int32_t id = stream->NoteDeviceCheck([](int64_t flat, int64_t value) {
    return InvalidArgument("ids[", flat, "]=", value, " is out of range [0, 10)");
  });
  EXPECT_EQ(id, 1);
  CudaDeviceError bad{id, 5, 12};  // what a kernel would store
  OFL_CUDA_CHECK(cudaMemcpy(stream->device_error(), &bad, sizeof(bad), cudaMemcpyHostToDevice));
  Status status = stream->TakeDeviceError();
  EXPECT_EQ(status.message(), "ids[5]=12 is out of range [0, 10)");
  EXPECT_TRUE(stream->TakeDeviceError().ok());  // reset, notes dropped
}

TEST(CudaBackendTest, ARuntimeFeedsAndFetchesThroughTheDevice) {
  OFL_SKIP_WITHOUT_CUDA();
  PlanMaker m(1);
  const int64_t x = m.Register("x", 0, {4});
  m.Source("x", 0, 0, x)->set_device("cuda:0");
  m.Sink("out", 0, 1, x)->set_device("cuda:0");
  for (auto& r : *m.plan().mutable_registers()) r.set_device("cuda:0");
  auto rt = Runtime::Create(m.plan()).value();
  std::vector<TensorMap> feeds;
  for (int i = 0; i < 3; ++i) {
    Tensor t(Shape({4}), DataType::kFloat32);
    for (int e = 0; e < 4; ++e) t.data<float>()[e] = 10.0f * i + e;
    feeds.push_back({{{"x", 0}, t}});
  }
  RunResult r = rt->Run(3, feeds, {"out"}).value();
  for (int i = 0; i < 3; ++i) {
    const Tensor& out = r.fetched[i].at({"out", 0});
    EXPECT_TRUE(out.device().is_host());
    for (int e = 0; e < 4; ++e) EXPECT_EQ(out.data<float>()[e], 10.0f * i + e) << i << " " << e;
  }
  EXPECT_GT(rt->peak_bytes()[0], 0);
}

TEST(CudaBackendTest, VariablesOnTheDeviceAreSetReadAndFetchedAsHostTensors) {
  OFL_SKIP_WITHOUT_CUDA();
  PlanMaker m(1);
  const int64_t w = m.Register("w", 0, {3}, /*slots=*/1, /*persistent=*/true);
  m.Variable("w", 0, 0, w)->set_device("cuda:0");
  m.Sink("seen", 0, 1, w)->set_device("cuda:0");
  for (auto& r : *m.plan().mutable_registers()) r.set_device("cuda:0");
  auto rt = Runtime::Create(m.plan()).value();
  Tensor value(Shape({3}), DataType::kFloat32);
  for (int e = 0; e < 3; ++e) value.data<float>()[e] = 1.5f * e - 1.0f;
  ASSERT_TRUE(rt->SetVariable("w", 0, value).ok());
  Tensor back = rt->GetVariable("w", 0).value();
  EXPECT_TRUE(back.device().is_host());
  RunResult r = rt->Run(2, {}, {"seen"}).value();
  for (int e = 0; e < 3; ++e) {
    EXPECT_EQ(back.data<float>()[e], 1.5f * e - 1.0f);
    EXPECT_EQ(r.fetched[1].at({"seen", 0}).data<float>()[e], 1.5f * e - 1.0f);
  }
}

}  // namespace
}  // namespace ofl
