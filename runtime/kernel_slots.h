// KernelSlots: at most `slots` kernels of one Runtime run at once, across
// all of its ranks. The Runtime makes one when its local ranks outnumber its
// kernel threads C (runtime.h): each rank then has a one-thread arena, and
// without a bound N ranks would run N kernels on C cores, each descheduled
// for the others in turn. A COMPUTE act holds a slot while its kernel runs
// and only then (kernels never wait for another rank, so holding one cannot
// deadlock; BOXING acts, which do wait for peers, take none).
//
// Thread-safe; the Runtime owns it and it outlives every actor thread.
#pragma once

#include <condition_variable>
#include <mutex>

// A thread that finds no free slot sleeps on a condition variable (no spinning)
// until a kernel ends.

namespace ofl {

class KernelSlots {
 public:
  explicit KernelSlots(int slots);
  KernelSlots(const KernelSlots&) = delete;
  KernelSlots& operator=(const KernelSlots&) = delete;

  int slots() const { return slots_; }
  // The most kernels that held a slot at once so far (tests read it).
  int peak_in_use() const;

  // Holds one slot of `slots` for its lifetime; a null `slots` holds nothing.
  class Hold {
   public:
    explicit Hold(KernelSlots* slots);
    ~Hold();
    Hold(const Hold&) = delete;
    Hold& operator=(const Hold&) = delete;

   private:
    KernelSlots* slots_;
  };

 private:
  void Acquire();
  void Release();

  const int slots_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  int in_use_ = 0;
  int peak_ = 0;
};

}  // namespace ofl
