// Shared oneDNN plumbing for the CPU kernels that call it (matmul, pooling):
// the one CPU engine, a stream per calling thread, per-thread scratchpad
// and packing buffers, and a bounded, thread-safe cache of primitives keyed by shape.
// Primitives are created with scratchpad_mode::user so one cached primitive
// may run on several threads at once, each with its own scratchpad.
#pragma once

#include <dnnl.hpp>
#include <map>
#include <memory>
#include <mutex>

namespace ofl::onednn {

dnnl::engine& Engine();
dnnl::stream& ThreadStream();
// A 64-byte aligned buffer of at least `bytes`, owned by the calling thread.
void* Scratchpad(size_t bytes);
// A second such buffer, for a kernel's own packed copy of an operand while
// the scratchpad is in use.
void* PackBuffer(size_t bytes);
// A primitive_attr with scratchpad_mode::user.
dnnl::primitive_attr UserScratchpad();

// Key -> shared_ptr<const Value>; Create runs outside the lock (two threads
// may both build one; the first stored wins). Cleared when it grows past
// kMaxEntries so a run with ever-changing shapes cannot grow it forever.
template <typename Key, typename Value>
class PrimitiveCache {
 public:
  static constexpr size_t kMaxEntries = 1024;

  template <typename CreateFn>
  std::shared_ptr<const Value> Get(const Key& key, CreateFn create) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = cache_.find(key);
      if (it != cache_.end()) return it->second;
    }
    std::shared_ptr<const Value> created = create();
    std::lock_guard<std::mutex> lock(mu_);
    if (cache_.size() >= kMaxEntries) cache_.clear();
    return cache_.emplace(key, created).first->second;
  }

 private:
  std::mutex mu_;
  std::map<Key, std::shared_ptr<const Value>> cache_;
};

}  // namespace ofl::onednn
