// Registers handed between streams are ordered by events (runtime/actor.h).
// A DeviceContext whose streams and events count their calls (around the CPU
// ones) shows the runtime records and waits once per slot hand-off between
// two streams, and never within one stream; the values stay right.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>

#include "oneflow_lite/core/cpu_stream.h"
#include "plan_maker.h"
#include "runtime/runtime.h"

namespace ofl {
namespace {

struct Counts {
  std::atomic<int64_t> records{0};
  std::atomic<int64_t> waits{0};
  std::atomic<int64_t> streams{0};
};

class CountingStream final : public Stream {
 public:
  CountingStream(Device device, Counts* counts) : inner_(device), counts_(counts) {}
  const Device& device() const override { return inner_.device(); }
  bool is_inline() const override { return true; }
  void Enqueue(std::function<void()> work) override { inner_.Enqueue(std::move(work)); }
  void Wait(const Event& event) override;
  void Synchronize() override { inner_.Synchronize(); }
  CpuInlineStream* inner() { return &inner_; }

 private:
  CpuInlineStream inner_;
  Counts* counts_;
};

class CountingEvent final : public Event {
 public:
  explicit CountingEvent(Counts* counts) : counts_(counts) {}
  void Record(Stream* stream) override {
    ++counts_->records;
    inner_.Record(static_cast<CountingStream*>(stream)->inner());
  }
  bool Query() const override { return inner_.Query(); }
  void Synchronize() const override { inner_.Synchronize(); }
  const CpuEvent& inner() const { return inner_; }

 private:
  CpuEvent inner_;
  Counts* counts_;
};

void CountingStream::Wait(const Event& event) {
  ++counts_->waits;
  inner_.Wait(static_cast<const CountingEvent&>(event).inner());
}

class CountingContext final : public DeviceContext {
 public:
  CountingContext(Device device, Counts* counts) : inner_(device), counts_(counts) {}
  const Device& device() const override { return inner_.device(); }
  Allocator* allocator() override { return inner_.allocator(); }
  std::unique_ptr<Stream> CreateStream() override {
    ++counts_->streams;
    return std::make_unique<CountingStream>(device(), counts_);
  }
  std::unique_ptr<Event> CreateEvent() override { return std::make_unique<CountingEvent>(counts_); }

 private:
  CpuDeviceContext inner_;
  Counts* counts_;
};

// source x (stream 0) -> relu (stream `relu_stream`) -> sink (stream 0), 2 slots each.
void RunRelu(int64_t relu_stream, Counts* counts) {
  PlanMaker m(1);
  const int64_t x = m.Register("x", 0, {3}, 2);
  const int64_t y = m.Register("y", 0, {3}, 2);
  m.Source("x", 0, 0, x);
  m.Compute("relu", "r", 0, relu_stream, {x}, {y});
  m.Sink("out", 0, 0, y);
  RuntimeOptions options;
  options.timeout = std::chrono::seconds(20);
  options.make_device = [counts](const Device& d) -> Maybe<std::unique_ptr<DeviceContext>> {
    return std::unique_ptr<DeviceContext>(std::make_unique<CountingContext>(d, counts));
  };
  std::unique_ptr<Runtime> rt = Runtime::Create(m.plan(), options).value();
  constexpr int kIterations = 6;
  std::vector<TensorMap> feeds(kIterations);
  for (int i = 0; i < kIterations; ++i) {
    feeds[i][{"x", 0}] = Tensor::Full({3}, DataType::kFloat32, i - 2.5);
  }
  RunResult result = rt->Run(kIterations, feeds, {"out"}).value();
  for (int i = 0; i < kIterations; ++i) {
    const Tensor& out = result.fetched[i].at({"out", 0});
    const float want = i - 2.5 > 0 ? static_cast<float>(i - 2.5) : 0.0f;  // relu by hand
    for (int e = 0; e < 3; ++e) EXPECT_EQ(out.data<float>()[e], want) << "iteration " << i;
  }
}

TEST(DeviceStreamsTest, RegistersBetweenStreamsAreHandedOverByEvents) {
  Counts counts;
  RunRelu(/*relu_stream=*/1, &counts);
  EXPECT_EQ(counts.streams, 2);  // one per actor thread
  // Per iteration: x and y each hand a slot across once each way. Records:
  // x written (source), x read (relu), y written (relu), y read (sink).
  // Waits: relu on x written and on y's previous read, source on x's read,
  // sink on y written.
  EXPECT_EQ(counts.records, 4 * 6);
  EXPECT_EQ(counts.waits, 4 * 6);
}

TEST(DeviceStreamsTest, OneStreamNeedsNoEvents) {
  Counts counts;
  RunRelu(/*relu_stream=*/0, &counts);
  EXPECT_EQ(counts.streams, 1);
  EXPECT_EQ(counts.records, 0);
  EXPECT_EQ(counts.waits, 0);
}

TEST(DeviceStreamsTest, ACudaPlanIsRefusedByNameInThisBuild) {
  PlanMaker m(1);
  const int64_t x = m.Register("x", 0, {3});
  const int64_t y = m.Register("y", 0, {3});
  m.Source("x", 0, 0, x)->set_device("cuda:0");
  m.Compute("relu", "r", 0, 0, {x}, {y})->set_device("cuda:0");
  for (auto& r : *m.plan().mutable_registers()) r.set_device("cuda:0");
  Maybe<std::unique_ptr<Runtime>> rt = Runtime::Create(m.plan());
  // A CUDA build on a machine with a GPU runs the plan; otherwise the device
  // is refused by name: the build has no backend, or the machine no GPU.
  if (rt.ok()) GTEST_SKIP() << "this build and machine run CUDA";
  const std::string message = rt.status().message();
  EXPECT_TRUE(message == "rank 0: cuda:0: this build has no cuda backend" ||
              message == "rank 0: cuda:0: no CUDA device")
      << message;
}

}  // namespace
}  // namespace ofl
