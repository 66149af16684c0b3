// Boxing actors take their stream from their device: every kind of boxing
// step runs on CPU devices whose streams are worker threads (the seam's
// stream and event logic, as a CUDA device would use it) with the same
// outputs, bit for bit, and the same communicator bytes as on the inline
// streams, and those bytes are the boxing planner's (graph/boxing.h). The
// hook sees its rank's device context and its actor thread's stream, and
// allocations on an actor thread belong to that stream
// (CachingAllocator::StreamScope).
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <set>

#include "oneflow_lite/core/caching_allocator.h"
#include "oneflow_lite/core/cpu_stream.h"
#include "tests/cpp/runtime/boxing_actor_case.h"

namespace ofl {
namespace {

Maybe<std::unique_ptr<DeviceContext>> WorkerStreams(const Device& device) {
  return std::unique_ptr<DeviceContext>(std::make_unique<CpuDeviceContext>(device, true));
}

// Each kind of step at least once (and an empty tensor).
std::vector<BoxingConversion> EveryKind() {
  const Placement four = TestPlacement({0, 1, 2, 3}), grid = TestPlacement({0, 1, 2, 3}, {2, 2});
  return {
      {Shape({5, 3}), DataType::kFloat32, four, TestSbp("P"), four, TestSbp("B")},
      {Shape({7, 3}), DataType::kFloat64, four, TestSbp("P"), four, TestSbp("S(0)")},
      {Shape({3, 7}), DataType::kInt32, four, TestSbp("P"), four, TestSbp("S(1)")},
      {Shape({6, 5}), DataType::kInt64, four, TestSbp("S(1)"), four, TestSbp("B")},
      {Shape({6, 5}), DataType::kFloat32, four, TestSbp("S(0)"), four, TestSbp("S(1)")},
      {Shape({5, 2}), DataType::kFloat32, four, TestSbp("B"), four, TestSbp("S(0)")},
      {Shape({5, 2}), DataType::kFloat64, four, TestSbp("B"), four, TestSbp("P")},
      {Shape({5, 2}), DataType::kFloat32, four, TestSbp("S(1)"), four, TestSbp("P")},
      {Shape({4, 6}), DataType::kFloat32, grid, TestSbp("(S(0), P)"), grid, TestSbp("(B, S(1))")},
      {Shape({5, 3}), DataType::kFloat32, TestPlacement({0, 1}), TestSbp("S(0)"),
       TestPlacement({2, 3, 4}), TestSbp("S(1)")},
      {Shape({0, 3}), DataType::kFloat32, four, TestSbp("P"), four, TestSbp("S(0)")},
  };
}

TEST(BoxingStreamsTest, WorkerStreamsGiveTheInlineStreamsBitsAndThePlannersBytes) {
  std::set<std::string> kinds;
  for (const BoxingConversion& c : EveryKind()) {
    SCOPED_TRACE(c.ToString());
    auto made = MakeBoxingActorCase(c, DeviceType::kCPU);
    ASSERT_TRUE(made.ok()) << made.status().message();
    for (const BoxingStep& step : made.value().boxing.steps)
      kinds.insert(BoxingKindName(step.kind));
    auto inline_run = RunBoxingActorCase(made.value(), {});
    ASSERT_TRUE(inline_run.ok()) << inline_run.status().message();
    std::atomic<int64_t> calls{0}, bad{0};
    auto worker_run = RunBoxingActorCase(
        made.value(), WorkerStreams, [&](const proto::TaskProto& task, const BoxingStream& on) {
          ++calls;
          const Device mine{DeviceType::kCPU, static_cast<int>(task.rank())};
          const bool ok = on.stream != nullptr && on.device != nullptr && !on.stream->is_inline() &&
                          on.stream->device() == mine && on.device->device() == mine &&
                          CachingAllocator::CurrentStream() == on.stream;
          if (!ok) ++bad;
        });
    ASSERT_TRUE(worker_run.ok()) << worker_run.status().message();
    EXPECT_EQ(CompareRuns(worker_run.value(), inline_run.value()), "");
    EXPECT_EQ(bad.load(), 0) << "of " << calls.load() << " boxing calls";
    if (!made.value().boxing.steps.empty()) {
      EXPECT_GT(calls.load(), 0);
    }
    for (const auto& [rank, bytes] : made.value().boxing.bytes_sent) {  // 2 iterations
      EXPECT_EQ(worker_run.value().bytes[rank], 2 * bytes) << "rank " << rank;
    }
  }
  // Every kind of step ran (the names of graph/boxing.h's BoxingKindName).
  for (const char* kind : {"ALL_REDUCE", "REDUCE_SCATTER", "ALL_GATHER", "ALL_TO_ALL",
                           "LOCAL_SLICE", "ZERO_FILL", "SCATTER_LOCAL", "SEND_RECV"}) {
    EXPECT_TRUE(kinds.count(kind)) << kind;
  }
}

// A host CachingAllocator behind a CPU device with worker streams.
class CachingCpuContext final : public DeviceContext {
 public:
  explicit CachingCpuContext(Device device) : inner_(device, true) {
    CachingAllocator::Backend backend;
    backend.allocate = [](int64_t bytes) { return std::aligned_alloc(256, Round(bytes)); };
    backend.free = [](void* p) { std::free(p); };
    backend.create_event = [] { return std::make_unique<CpuEvent>(); };
    allocator_ = std::make_shared<CachingAllocator>(device, backend);
  }
  const Device& device() const override { return inner_.device(); }
  Allocator* allocator() override { return allocator_.get(); }
  std::unique_ptr<Stream> CreateStream() override { return inner_.CreateStream(); }
  std::unique_ptr<Event> CreateEvent() override { return inner_.CreateEvent(); }

 private:
  static size_t Round(int64_t bytes) { return static_cast<size_t>((bytes + 255) / 256 * 256); }
  CpuDeviceContext inner_;
  std::shared_ptr<CachingAllocator> allocator_;
};

TEST(BoxingStreamsTest, ScratchOfABoxingActorBelongsToItsStream) {
  const Placement two = TestPlacement({0, 1});
  auto made = MakeBoxingActorCase(
      {Shape({8, 4}), DataType::kFloat32, two, TestSbp("P"), two, TestSbp("B")}, DeviceType::kCPU);
  ASSERT_TRUE(made.ok()) << made.status().message();
  std::mutex mu;
  std::vector<std::shared_ptr<CachingAllocator>> allocators;  // kept alive past the run
  std::set<Stream*> scratch_streams;
  auto make = [&](const Device& device) -> Maybe<std::unique_ptr<DeviceContext>> {
    return std::unique_ptr<DeviceContext>(std::make_unique<CachingCpuContext>(device));
  };
  auto run =
      RunBoxingActorCase(made.value(), make, [&](const proto::TaskProto&, const BoxingStream& on) {
        auto* caching = dynamic_cast<CachingAllocator*>(on.device->allocator());
        ASSERT_NE(caching, nullptr);
        // Scratch freed on this stream is reused at once by the same stream.
        const int64_t before = caching->backend_allocations();
        { Tensor a = caching->NewTensor(Shape({100}), DataType::kFloat32).value(); }
        { Tensor b = caching->NewTensor(Shape({100}), DataType::kFloat32).value(); }
        EXPECT_LE(caching->backend_allocations(), before + 1);
        std::lock_guard<std::mutex> lock(mu);
        scratch_streams.insert(CachingAllocator::CurrentStream());
        allocators.push_back(
            std::static_pointer_cast<CachingAllocator>(caching->shared_from_this()));
      });
  ASSERT_TRUE(run.ok()) << run.status().message();
  EXPECT_EQ(scratch_streams.size(), 2u);  // one boxing stream per rank, never null
  EXPECT_FALSE(scratch_streams.count(nullptr));
  // Outside the actors' streams the cached block is not reused: a new one.
  ASSERT_FALSE(allocators.empty());
  CachingAllocator& caching = *allocators.front();
  CpuInlineStream other;
  CachingAllocator::StreamScope scope(&other);
  const int64_t before = caching.backend_allocations();
  Tensor c = caching.NewTensor(Shape({100}), DataType::kFloat32).value();
  EXPECT_EQ(caching.backend_allocations(), before + 1);
}

}  // namespace
}  // namespace ofl
