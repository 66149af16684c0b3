// CachingAllocator's bins, stream-aware reuse, cross-stream events and
// out-of-memory retry, on the CPU: a host backend with a byte budget, worker
// streams and CPU events stand in for cudaMalloc, streams and events.
#include "oneflow_lite/core/caching_allocator.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <future>
#include <map>

#include "oneflow_lite/core/cpu_stream.h"

namespace ofl {
namespace {

struct HostBackend {
  int64_t budget = int64_t{1} << 40;
  int64_t held = 0;
  int64_t frees = 0;
  std::map<void*, int64_t> sizes;

  CachingAllocator::Backend Make() {
    CachingAllocator::Backend b;
    b.allocate = [this](int64_t bytes) -> void* {
      if (held + bytes > budget) return nullptr;
      held += bytes;
      void* p = std::aligned_alloc(256, static_cast<size_t>(bytes));
      sizes[p] = bytes;
      return p;
    };
    b.free = [this](void* p) {
      held -= sizes.at(p);
      sizes.erase(p);
      ++frees;
      std::free(p);
    };
    b.create_event = [] { return std::make_unique<CpuEvent>(); };
    b.alignment = 256;
    return b;
  }
};

TEST(CachingAllocatorTest, BinsAreMultiplesOf512ThenFourPerOctave) {
  EXPECT_EQ(CachingAllocator::BinBytes(0), 512);
  EXPECT_EQ(CachingAllocator::BinBytes(1), 512);
  EXPECT_EQ(CachingAllocator::BinBytes(513), 1024);
  EXPECT_EQ(CachingAllocator::BinBytes((1 << 20) - 1), 1 << 20);
  EXPECT_EQ(CachingAllocator::BinBytes(1 << 20), 1 << 20);
  EXPECT_EQ(CachingAllocator::BinBytes((1 << 20) + 1), (1 << 20) + (1 << 18));  // 1.25 MiB
  EXPECT_EQ(CachingAllocator::BinBytes(3 << 20), 3 << 20);  // 2 MiB octave: steps of 512 KiB
  EXPECT_EQ(CachingAllocator::BinBytes((3 << 20) + 1), (3 << 20) + (1 << 19));
}

TEST(CachingAllocatorTest, SameStreamReusesTheBinAndCountsRequestedBytes) {
  HostBackend host;
  auto alloc = std::make_shared<CachingAllocator>(Device{}, host.Make());
  void* first = nullptr;
  {
    std::shared_ptr<void> a = alloc->AllocateShared(1000).value();
    first = a.get();
    EXPECT_EQ(alloc->live_bytes(), 1000);
    EXPECT_EQ(alloc->reserved_bytes(), 1024);
  }
  EXPECT_EQ(alloc->live_bytes(), 0);
  EXPECT_EQ(alloc->peak_bytes(), 1000);
  EXPECT_EQ(alloc->cached_bytes(), 1024);
  std::shared_ptr<void> b = alloc->AllocateShared(900).value();  // bin 1024 again
  EXPECT_EQ(b.get(), first);
  EXPECT_EQ(alloc->backend_allocations(), 1);
  std::shared_ptr<void> c = alloc->AllocateShared(2000).value();  // bin 2048: new
  EXPECT_NE(c.get(), first);
  EXPECT_EQ(alloc->backend_allocations(), 2);
  EXPECT_EQ(alloc->peak_bytes(), 2900);
}

TEST(CachingAllocatorTest, AnotherStreamDoesNotReuseAFreedBuffer) {
  HostBackend host;
  auto alloc = std::make_shared<CachingAllocator>(Device{}, host.Make());
  CpuWorkerStream a, b;
  void* first = nullptr;
  {
    CachingAllocator::StreamScope scope(&a);
    first = alloc->Allocate(700);
    alloc->Free(first, 700);
  }
  CachingAllocator::StreamScope scope(&b);
  void* second = alloc->Allocate(700);
  EXPECT_NE(second, first);
  alloc->Free(second, 700);
}

TEST(CachingAllocatorTest, RecordedStreamDelaysReuseUntilItsWorkIsDone) {
  HostBackend host;
  auto alloc = std::make_shared<CachingAllocator>(Device{}, host.Make());
  CpuWorkerStream a, b;
  std::promise<void> gate;
  std::shared_future<void> opened = gate.get_future().share();
  b.Enqueue([opened] { opened.wait(); });  // b's "kernel" still reads the buffer
  CachingAllocator::StreamScope scope(&a);
  void* p = alloc->Allocate(4096);
  alloc->RecordStream(p, &b);
  alloc->Free(p, 4096);
  void* q = alloc->Allocate(4096);  // b has not reached the free's point
  EXPECT_NE(q, p);
  alloc->Free(q, 4096);
  gate.set_value();
  b.Synchronize();
  void* r = alloc->Allocate(4096);
  void* s = alloc->Allocate(4096);
  EXPECT_TRUE((r == p && s == q) || (r == q && s == p));
  EXPECT_EQ(alloc->backend_allocations(), 2);
  alloc->Free(r, 4096);
  alloc->Free(s, 4096);
}

TEST(CachingAllocatorTest, OutOfMemoryEmptiesTheCacheRetriesThenNamesDeviceAndBytes) {
  HostBackend host;
  host.budget = 3000;
  auto alloc = std::make_shared<CachingAllocator>(Device{DeviceType::kCPU, 2}, host.Make());
  { std::shared_ptr<void> small = alloc->AllocateShared(1024).value(); }
  EXPECT_EQ(alloc->cached_bytes(), 1024);
  // 1024 cached + 2048 > 3000: the cached buffer goes back, then it fits.
  std::shared_ptr<void> big = alloc->AllocateShared(2048).value();
  EXPECT_EQ(host.frees, 1);
  EXPECT_EQ(alloc->reserved_bytes(), 2048);
  Maybe<std::shared_ptr<void>> none = alloc->AllocateShared(2048);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().message(),
            "cpu:2: out of memory allocating 2048 bytes (2048 bytes live on this device, peak "
            "2048)");
  EXPECT_EQ(alloc->live_bytes(), 2048);
}

TEST(CachingAllocatorTest, EmptyCacheReturnsFreeBuffersToTheBackend) {
  HostBackend host;
  auto alloc = std::make_shared<CachingAllocator>(Device{}, host.Make());
  void* p = alloc->Allocate(10);
  void* q = alloc->Allocate(5 << 20);
  alloc->Free(p, 10);
  EXPECT_EQ(host.held, 512 + (5 << 20));
  alloc->EmptyCache();
  EXPECT_EQ(host.held, 5 << 20);
  EXPECT_EQ(alloc->reserved_bytes(), 5 << 20);
  alloc->Free(q, 5 << 20);
  alloc.reset();
  EXPECT_EQ(host.held, 0);
}

}  // namespace
}  // namespace ofl
