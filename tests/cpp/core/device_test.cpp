// The device seam (oneflow_lite/core/device.h, stream.h, cpu_stream.h,
// allocator.h, device_context.h): device names, CPU worker-thread streams
// and events ordering work across streams, and allocator accounting.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <future>
#include <thread>
#include <vector>

#include "oneflow_lite/core/allocator.h"
#include "oneflow_lite/core/cpu_stream.h"
#include "oneflow_lite/core/device_backend.h"
#include "oneflow_lite/core/device_context.h"

namespace ofl {
namespace {

using std::chrono::milliseconds;

TEST(DeviceTest, ParsesAndPrints) {
  EXPECT_EQ(Device::Parse("cpu:0").value(), (Device{DeviceType::kCPU, 0}));
  EXPECT_EQ(Device::Parse("cuda:3").value(), (Device{DeviceType::kCUDA, 3}));
  EXPECT_EQ(Device::Parse("cpu").value(), (Device{DeviceType::kCPU, 0}));
  EXPECT_EQ(Device::Parse("cpu:2147483647").value().index, 2147483647);
  EXPECT_EQ((Device{DeviceType::kCUDA, 7}).ToString(), "cuda:7");
  EXPECT_EQ(Device{}.ToString(), "cpu:0");
  EXPECT_TRUE(Device{}.is_host());
  EXPECT_FALSE((Device{DeviceType::kCUDA, 0}).is_host());
  EXPECT_LT((Device{DeviceType::kCPU, 5}), (Device{DeviceType::kCUDA, 0}));
}

TEST(DeviceTest, ParseErrorsNameTheTextAndTheProblem) {
  struct Case {
    const char* text;
    const char* message;
  };
  const Case cases[] = {
      {"gpu:0", "device 'gpu:0': unknown device type 'gpu' (expected cpu or cuda)"},
      {"", "device '': unknown device type ''"},
      {"cpu:x", "device 'cpu:x': index 'x' is not an integer in [0, 2147483647]"},
      {"cpu:", "device 'cpu:': index '' is not an integer"},
      {"cpu:-1", "device 'cpu:-1': index '-1' is not an integer"},
      {"cuda:2147483648", "index '2147483648' is not an integer in [0, 2147483647]"},
      {"cuda:1:2", "device 'cuda:1:2': index '1:2'"},
  };
  for (const Case& c : cases) {
    Maybe<Device> d = Device::Parse(c.text);
    ASSERT_FALSE(d.ok()) << c.text;
    EXPECT_EQ(d.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(d.status().message().find(c.message), std::string::npos) << d.status().message();
  }
}

TEST(CpuStreamTest, WorkerStreamRunsWorkInOrderOnItsOwnThread) {
  CpuWorkerStream stream(Device{DeviceType::kCPU, 1});
  EXPECT_FALSE(stream.is_inline());
  std::vector<int> order;  // written by the worker only
  std::atomic<bool> other_thread{true};
  const std::thread::id caller = std::this_thread::get_id();
  for (int i = 0; i < 1000; ++i) {
    stream.Enqueue([&, i] {
      if (i % 100 == 0) std::this_thread::sleep_for(std::chrono::microseconds(200));
      if (std::this_thread::get_id() == caller) other_thread = false;
      order.push_back(i);
    });
  }
  stream.Synchronize();
  ASSERT_EQ(order.size(), 1000u);
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(order[i], i);
  EXPECT_TRUE(other_thread);
}

TEST(CpuStreamTest, WorkerStreamRunsWhatWasEnqueuedBeforeItGoes) {
  std::atomic<int> ran{0};
  {
    CpuWorkerStream stream;
    stream.Enqueue([] { std::this_thread::sleep_for(milliseconds(50)); });
    for (int i = 0; i < 10; ++i) stream.Enqueue([&] { ++ran; });
  }
  EXPECT_EQ(ran, 10);
}

// B waits on an event A records after a slow write: B's read sees it. With a
// Wait that did nothing, B would read before A's sleep ended.
TEST(CpuStreamTest, EventOrdersAnotherStreamsLaterWork) {
  CpuDeviceContext device(Device{DeviceType::kCPU, 0}, /*worker_streams=*/true);
  std::unique_ptr<Stream> a = device.CreateStream(), b = device.CreateStream();
  std::unique_ptr<Event> event = device.CreateEvent();
  std::atomic<int> value{0};
  std::atomic<int> seen{-1};
  a->Enqueue([&] {
    std::this_thread::sleep_for(milliseconds(100));
    value = 42;
  });
  event->Record(a.get());
  b->Wait(*event);
  b->Enqueue([&] { seen = value.load(); });
  b->Synchronize();
  EXPECT_EQ(seen, 42);
  // Work on B enqueued before the Wait is not held back by it.
  std::promise<void> release;
  std::shared_future<void> gate = release.get_future().share();
  std::atomic<bool> b_ran{false};
  a->Enqueue([gate] { gate.wait(); });
  event->Record(a.get());
  b->Enqueue([&] { b_ran = true; });
  b->Wait(*event);
  for (int i = 0; i < 2000 && !b_ran; ++i) std::this_thread::sleep_for(milliseconds(1));
  EXPECT_TRUE(b_ran);
  release.set_value();
  b->Synchronize();
}

TEST(CpuStreamTest, QueryAndSynchronizeFollowTheRecordedPoint) {
  CpuDeviceContext device(Device{}, /*worker_streams=*/true);
  std::unique_ptr<Stream> a = device.CreateStream();
  std::unique_ptr<Event> event = device.CreateEvent();
  EXPECT_TRUE(event->Query());  // never recorded: complete
  event->Synchronize();
  std::promise<void> release;
  std::shared_future<void> gate = release.get_future().share();
  std::atomic<bool> done{false};
  a->Enqueue([gate, &done] {
    gate.wait();
    done = true;
  });
  event->Record(a.get());
  std::this_thread::sleep_for(milliseconds(20));
  EXPECT_FALSE(event->Query());
  release.set_value();
  event->Synchronize();
  EXPECT_TRUE(done);
  EXPECT_TRUE(event->Query());
}

// A Wait holds the point recorded before it, not a later Record's.
TEST(CpuStreamTest, WaitKeepsThePointRecordedBeforeIt) {
  CpuDeviceContext device(Device{}, /*worker_streams=*/true);
  std::unique_ptr<Stream> a = device.CreateStream(), b = device.CreateStream();
  std::unique_ptr<Event> event = device.CreateEvent();
  std::promise<void> first, second;
  std::shared_future<void> gate1 = first.get_future().share();
  std::shared_future<void> gate2 = second.get_future().share();
  a->Enqueue([gate1] { gate1.wait(); });
  event->Record(a.get());
  b->Wait(*event);
  std::atomic<bool> b_ran{false};
  b->Enqueue([&] { b_ran = true; });
  a->Enqueue([gate2] { gate2.wait(); });
  event->Record(a.get());  // a later point: B's Wait does not move to it
  first.set_value();
  for (int i = 0; i < 2000 && !b_ran; ++i) std::this_thread::sleep_for(milliseconds(1));
  EXPECT_TRUE(b_ran);
  EXPECT_FALSE(event->Query());
  second.set_value();
  a->Synchronize();
  EXPECT_TRUE(event->Query());
}

TEST(CpuStreamTest, InlineStreamRunsAtOnceAndBlocksItsCallerOnWait) {
  CpuInlineStream inline_stream(Device{DeviceType::kCPU, 2});
  EXPECT_TRUE(inline_stream.is_inline());
  int ran = 0;
  inline_stream.Enqueue([&] { ++ran; });
  EXPECT_EQ(ran, 1);  // before Enqueue returned
  CpuEvent event;
  event.Record(&inline_stream);
  EXPECT_TRUE(event.Query());  // its work has run
  EXPECT_EQ(event.point(), nullptr);

  CpuWorkerStream worker(Device{DeviceType::kCPU, 2});
  std::atomic<int> value{0};
  worker.Enqueue([&] {
    std::this_thread::sleep_for(milliseconds(100));
    value = 7;
  });
  event.Record(&worker);
  inline_stream.Wait(event);  // blocks this thread until the worker's point
  EXPECT_EQ(value, 7);
}

TEST(AllocatorTest, TracksLiveAndPeakPerDevice) {
  std::shared_ptr<CpuAllocator> alloc = CpuAllocator::Create(Device{DeviceType::kCPU, 3});
  std::shared_ptr<CpuAllocator> other = CpuAllocator::Create(Device{DeviceType::kCPU, 4});
  Tensor a = alloc->NewTensor({10}, DataType::kFloat32).value();  // 40 bytes
  EXPECT_EQ(a.device(), (Device{DeviceType::kCPU, 3}));
  {
    Tensor b = alloc->NewTensor({4, 4}, DataType::kFloat64).value();  // 128 bytes
    Tensor shared = b;
    EXPECT_EQ(alloc->live_bytes(), 168);
    EXPECT_EQ(shared.Reshaped({16}).device(), b.device());
  }
  EXPECT_EQ(alloc->live_bytes(), 40);
  EXPECT_EQ(alloc->peak_bytes(), 168);
  Tensor c = alloc->NewTensor({3}, DataType::kInt64).value();  // 24 bytes: below the peak
  EXPECT_EQ(alloc->live_bytes(), 64);
  EXPECT_EQ(alloc->peak_bytes(), 168);
  alloc->ResetPeak();
  EXPECT_EQ(alloc->peak_bytes(), 64);
  EXPECT_EQ(other->live_bytes(), 0);
  EXPECT_EQ(other->peak_bytes(), 0);

  void* raw = alloc->Allocate(1000, 4096);
  ASSERT_NE(raw, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(raw) % 4096, 0u);
  EXPECT_EQ(alloc->live_bytes(), 1064);
  alloc->Free(raw, 1000);
  EXPECT_EQ(alloc->live_bytes(), 64);
  EXPECT_EQ(alloc->peak_bytes(), 1064);
}

TEST(AllocatorTest, AlignsEveryBufferAndCountsRequestedBytes) {
  std::shared_ptr<CpuAllocator> alloc = CpuAllocator::Create();
  std::vector<std::shared_ptr<void>> keep;
  int64_t total = 0;
  for (int64_t bytes : {0, 1, 63, 64, 65, 1000}) {
    for (size_t alignment : {size_t{1}, size_t{8}, size_t{64}, size_t{256}}) {
      keep.push_back(alloc->AllocateShared(bytes, alignment).value());
      ASSERT_NE(keep.back(), nullptr);
      EXPECT_EQ(reinterpret_cast<uintptr_t>(keep.back().get()) % alignment, 0u) << alignment;
      total += bytes;
    }
  }
  EXPECT_EQ(alloc->live_bytes(), total);
  keep.clear();
  EXPECT_EQ(alloc->live_bytes(), 0);
  EXPECT_EQ(alloc->peak_bytes(), total);
  Tensor t = alloc->NewTensor({5}, DataType::kFloat32).value();
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t.raw()) % Allocator::kDefaultAlignment, 0u);
}

TEST(AllocatorTest, TensorMayOutliveTheAllocatorHandle) {
  Tensor t;
  {
    std::shared_ptr<CpuAllocator> alloc = CpuAllocator::Create();
    t = alloc->NewTensor({2}, DataType::kFloat32).value();
  }
  t.Fill(1.0);
  EXPECT_EQ(t.data<float>()[1], 1.0f);
}

TEST(AllocatorTest, CountsFromManyThreads) {
  std::shared_ptr<CpuAllocator> alloc = CpuAllocator::Create();
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&] {
      for (int k = 0; k < 1000; ++k) alloc->Free(alloc->Allocate(100), 100);
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(alloc->live_bytes(), 0);
  EXPECT_GE(alloc->peak_bytes(), 100);
  EXPECT_LE(alloc->peak_bytes(), 400);
}

TEST(AllocatorTest, RefusesAShapeTooLargeToAllocateByName) {
  std::shared_ptr<CpuAllocator> alloc = CpuAllocator::Create();
  Maybe<Tensor> t = alloc->NewTensor({int64_t{1} << 50}, DataType::kFloat32);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("tensor of shape"), std::string::npos)
      << t.status().message();
  EXPECT_EQ(alloc->live_bytes(), 0);
}

TEST(DeviceContextTest, MakesCpuContextsAndNamesMissingBackends) {
  std::unique_ptr<DeviceContext> cpu = CreateDeviceContext(Device{DeviceType::kCPU, 5}).value();
  EXPECT_EQ(cpu->device(), (Device{DeviceType::kCPU, 5}));
  EXPECT_EQ(cpu->allocator()->device(), cpu->device());
  std::unique_ptr<Stream> stream = cpu->CreateStream();
  EXPECT_TRUE(stream->is_inline());  // the runtime's: kernels run on the actor thread
  EXPECT_EQ(stream->device(), cpu->device());
  Maybe<std::unique_ptr<DeviceContext>> cuda = CreateDeviceContext(Device{DeviceType::kCUDA, 1});
  ASSERT_FALSE(cuda.ok());
  EXPECT_EQ(cuda.status().message(), "cuda:1: this build has no cuda backend");
}

TEST(DeviceContextTest, CopyAndFillKeepTheStreamsOrder) {
  CpuDeviceContext context(Device{}, /*worker_streams=*/true);
  std::unique_ptr<Stream> stream = context.CreateStream();
  std::promise<void> gate;
  std::shared_future<void> opened = gate.get_future().share();
  stream->Enqueue([opened] { opened.wait(); });
  std::vector<int32_t> source = {1, 2, 3, 4}, target(4, 7);
  context.Fill(stream.get(), target.data(), 0, 4 * sizeof(int32_t));
  context.Copy(stream.get(), target.data() + 1, source.data(), 2 * sizeof(int32_t));
  EXPECT_EQ(target, (std::vector<int32_t>{7, 7, 7, 7}));  // behind the gate
  gate.set_value();
  stream->Synchronize();
  EXPECT_EQ(target, (std::vector<int32_t>{0, 1, 2, 0}));  // fill, then copy
}

TEST(TensorDeviceTest, CopiesBetweenHostTensorsOnlyAndSaysWhy) {
  Tensor host({2}, DataType::kFloat32);
  EXPECT_EQ(host.device(), Device{});
  std::shared_ptr<float> buffer(new float[2], std::default_delete<float[]>());  // "device" memory
  Tensor fake(Shape{2}, DataType::kFloat32, buffer, buffer.get(), Device{DeviceType::kCUDA, 0});
  EXPECT_EQ(fake.device(), (Device{DeviceType::kCUDA, 0}));
  Status s = Tensor::CheckCopy(host, fake, "variable 'w'");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("variable 'w': is on cpu:0, got a tensor on cuda:0"),
            std::string::npos)
      << s.message();
  Tensor other_cpu =
      CpuAllocator::Create(Device{DeviceType::kCPU, 1})->NewTensor({2}, DataType::kFloat32).value();
  EXPECT_TRUE(Tensor::CheckCopy(host, other_cpu, "x").ok());  // host memory either way
  EXPECT_FALSE(Tensor::CheckCopy(host, Tensor({3}, DataType::kFloat32), "x").ok());
  EXPECT_DEATH(host.CopyFrom(fake), "copy task on a stream");
}

}  // namespace
}  // namespace ofl
