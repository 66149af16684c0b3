#include "ops/onednn.h"

#include <glog/logging.h>

#include <cstdlib>
#include <memory>

#include "ops/cpu_isa.h"

namespace ofl::onednn {

dnnl::engine& Engine() {
  // The level first: it caps oneDNN's ISA, which only counts before the
  // first primitive.
  static dnnl::engine engine = [] {
    ActiveCpuIsa();
    return dnnl::engine(dnnl::engine::kind::cpu, 0);
  }();
  return engine;
}

dnnl::stream& ThreadStream() {
  thread_local dnnl::stream stream(Engine());
  return stream;
}

namespace {

// A 64-byte aligned buffer of at least `bytes`, one per (calling thread, Slot).
template <int Slot>
void* ThreadBuffer(size_t bytes, const char* what) {
  struct Free {
    void operator()(void* p) const { std::free(p); }
  };
  thread_local std::unique_ptr<void, Free> buffer;
  thread_local size_t capacity = 0;
  if (bytes > capacity) {
    size_t rounded = (bytes + 63) / 64 * 64;
    buffer.reset(std::aligned_alloc(64, rounded));
    CHECK(buffer) << "out of memory for a " << rounded << "-byte " << what;
    capacity = rounded;
  }
  return buffer.get();
}

}  // namespace

void* Scratchpad(size_t bytes) { return ThreadBuffer<0>(bytes, "oneDNN scratchpad"); }

void* PackBuffer(size_t bytes) { return ThreadBuffer<1>(bytes, "packed operand"); }

dnnl::primitive_attr UserScratchpad() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

}  // namespace ofl::onednn
