#include "oneflow_lite/core/caching_allocator.h"

#include <glog/logging.h>

#include <algorithm>

namespace ofl {

namespace {
thread_local Stream* current_stream = nullptr;
constexpr int64_t kSmallBin = 512;
constexpr int64_t kLargeFrom = int64_t{1} << 20;
}  // namespace

CachingAllocator::StreamScope::StreamScope(Stream* stream) : previous_(current_stream) {
  current_stream = stream;
}

CachingAllocator::StreamScope::~StreamScope() { current_stream = previous_; }

Stream* CachingAllocator::CurrentStream() { return current_stream; }

CachingAllocator::CachingAllocator(Device device, Backend backend)
    : Allocator(device), backend_(std::move(backend)) {
  CHECK(backend_.allocate && backend_.free && backend_.create_event)
      << device << ": a caching allocator needs allocate, free and create_event";
}

CachingAllocator::~CachingAllocator() {
  std::lock_guard<std::mutex> lock(mu_);
  ReapPending(/*wait=*/true);
  ReleaseFree();
  // Buffers still live here were never freed: a leak of the caller's (shared
  // buffers keep the allocator alive, so none of ours can be live).
  LOG_IF(WARNING, !live_blocks_.empty())
      << device() << ": " << live_blocks_.size() << " buffers not freed before the allocator";
}

int64_t CachingAllocator::BinBytes(int64_t bytes) {
  CHECK_GE(bytes, 0);
  if (bytes < kLargeFrom)
    return std::max<int64_t>(kSmallBin, (bytes + kSmallBin - 1) / kSmallBin * kSmallBin);
  int top = 63 - __builtin_clzll(static_cast<unsigned long long>(bytes));  // floor(log2)
  const int64_t step = int64_t{1} << (top - 2);                            // four bins per octave
  return (bytes + step - 1) / step * step;
}

void* CachingAllocator::AllocateRaw(int64_t bytes, size_t alignment) {
  CHECK_LE(alignment, backend_.alignment)
      << device() << ": alignment " << alignment << " above the backend's " << backend_.alignment;
  const int64_t bin = BinBytes(bytes);
  Stream* stream = current_stream;
  std::lock_guard<std::mutex> lock(mu_);
  ReapPending(/*wait=*/false);
  auto it = free_.find({stream, bin});
  if (it != free_.end() && !it->second.empty()) {
    void* pointer = it->second.back();
    it->second.pop_back();
    cached_ -= bin;
    live_blocks_[pointer] = Block{bin, stream, {}};
    return pointer;
  }
  void* pointer = backend_.allocate(bin);
  if (pointer == nullptr) {  // give the cache back and try once more
    ReapPending(/*wait=*/true);
    ReleaseFree();
    pointer = backend_.allocate(bin);
    if (pointer == nullptr) return nullptr;
  }
  ++backend_allocations_;
  reserved_ += bin;
  live_blocks_[pointer] = Block{bin, stream, {}};
  return pointer;
}

void CachingAllocator::FreeRaw(void* pointer, int64_t) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = live_blocks_.find(pointer);
  CHECK(it != live_blocks_.end()) << device() << ": free of a pointer this allocator did not give";
  Block block = std::move(it->second);
  live_blocks_.erase(it);
  cached_ += block.bin;
  if (block.other_streams.empty()) {
    free_[{block.stream, block.bin}].push_back(pointer);
    return;
  }
  Pending pending{pointer, std::move(block), {}};
  for (Stream* other : pending.block.other_streams) {
    std::unique_ptr<Event> event = TakeEvent();
    event->Record(other);
    pending.events.push_back(std::move(event));
  }
  pending_.push_back(std::move(pending));
}

void CachingAllocator::RecordStream(void* pointer, Stream* stream) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = live_blocks_.find(pointer);
  CHECK(it != live_blocks_.end()) << device() << ": RecordStream of a pointer not live here";
  Block& block = it->second;
  if (stream == block.stream) return;
  if (std::find(block.other_streams.begin(), block.other_streams.end(), stream) ==
      block.other_streams.end()) {
    block.other_streams.push_back(stream);
  }
}

void CachingAllocator::ReapPending(bool wait) {
  auto reached = [wait](Pending& p) {
    for (auto& event : p.events) {
      if (wait) event->Synchronize();
      if (!event->Query()) return false;
    }
    return true;
  };
  std::vector<Pending> still;
  for (Pending& p : pending_) {
    if (!reached(p)) {
      still.push_back(std::move(p));
      continue;
    }
    free_[{p.block.stream, p.block.bin}].push_back(p.pointer);
    for (auto& event : p.events) spare_events_.push_back(std::move(event));
  }
  pending_ = std::move(still);
}

void CachingAllocator::ReleaseFree() {
  for (auto& [key, pointers] : free_) {
    for (void* pointer : pointers) {
      backend_.free(pointer);
      reserved_ -= key.second;
      cached_ -= key.second;
    }
  }
  free_.clear();
}

std::unique_ptr<Event> CachingAllocator::TakeEvent() {
  if (spare_events_.empty()) return backend_.create_event();
  std::unique_ptr<Event> event = std::move(spare_events_.back());
  spare_events_.pop_back();
  return event;
}

void CachingAllocator::EmptyCache() {
  std::lock_guard<std::mutex> lock(mu_);
  ReapPending(/*wait=*/true);
  ReleaseFree();
}

int64_t CachingAllocator::reserved_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return reserved_;
}

int64_t CachingAllocator::cached_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return cached_;
}

int64_t CachingAllocator::backend_allocations() const {
  std::lock_guard<std::mutex> lock(mu_);
  return backend_allocations_;
}

}  // namespace ofl
