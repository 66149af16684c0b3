#include "runtime/kernel_slots.h"

#include <glog/logging.h>

#include <algorithm>

namespace ofl {

KernelSlots::KernelSlots(int slots) : slots_(slots) { CHECK_GT(slots, 0); }

int KernelSlots::peak_in_use() const {
  std::lock_guard<std::mutex> lock(mu_);
  return peak_;
}

void KernelSlots::Acquire() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return in_use_ < slots_; });
  ++in_use_;
  peak_ = std::max(peak_, in_use_);
}

void KernelSlots::Release() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    CHECK_GT(in_use_, 0);
    --in_use_;
  }
  cv_.notify_one();
}

KernelSlots::Hold::Hold(KernelSlots* slots) : slots_(slots) {
  if (slots_ != nullptr) slots_->Acquire();
}

KernelSlots::Hold::~Hold() {
  if (slots_ != nullptr) slots_->Release();
}

}  // namespace ofl
