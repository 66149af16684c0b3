// The CPU implementations of Stream and Event (oneflow_lite/core/stream.h).
//
// CpuInlineStream runs work at once on the calling thread: the stream of a
// runtime actor thread, whose CPU kernels run on that thread. Its order is
// the caller's; an event recorded on it is complete at once (nothing is
// allocated or queued), and Wait blocks the calling thread until the point
// is reached (the work after it runs on that thread).
//
// Thread safety as stream.h says; the destructor of a CpuWorkerStream runs the
// work already enqueued, then joins its thread.
#pragma once

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>

#include "oneflow_lite/core/stream.h"

// CpuWorkerStream owns one thread that runs its work in enqueue order: a CPU
// stand-in for an asynchronous device stream, so that CI tests the seam's
// ordering logic (Record, Wait, Query, Synchronize) without a GPU. Wait
// enqueues a step that blocks the worker until the event's point.
//
// CpuEvent keeps its recorded point as shared state (a flag set by the
// recording stream), so a Wait holds on to the point it saw even when the event
// is recorded again.

namespace ofl {

// A point on a CPU stream: set once when the stream reaches it.
class CpuPoint {
 public:
  void Set();
  bool IsSet() const;
  void WaitSet() const;

 private:
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  bool set_ = false;
};

class CpuStream : public Stream {
 public:
  explicit CpuStream(Device device);
  const Device& device() const override { return device_; }
  void Wait(const Event& event) override;
  // The point after all work enqueued so far; null when it is reached now.
  virtual std::shared_ptr<CpuPoint> Mark() = 0;

 protected:
  // Makes later work wait for `point` (not yet set).
  virtual void WaitFor(std::shared_ptr<CpuPoint> point) = 0;

 private:
  const Device device_;
};

class CpuInlineStream final : public CpuStream {
 public:
  explicit CpuInlineStream(Device device = {}) : CpuStream(device) {}
  bool is_inline() const override { return true; }
  void Enqueue(std::function<void()> work) override { work(); }
  void Synchronize() override {}
  std::shared_ptr<CpuPoint> Mark() override { return nullptr; }

 protected:
  void WaitFor(std::shared_ptr<CpuPoint> point) override { point->WaitSet(); }
};

class CpuWorkerStream final : public CpuStream {
 public:
  explicit CpuWorkerStream(Device device = {});
  ~CpuWorkerStream() override;
  bool is_inline() const override { return false; }
  void Enqueue(std::function<void()> work) override;
  void Synchronize() override;
  std::shared_ptr<CpuPoint> Mark() override;

 protected:
  void WaitFor(std::shared_ptr<CpuPoint> point) override;

 private:
  void Main();

  std::mutex mu_;
  std::condition_variable cv_;  // work arrived, or stop
  std::deque<std::function<void()>> queue_;
  bool stop_ = false;
  std::thread thread_;
};

class CpuEvent final : public Event {
 public:
  void Record(Stream* stream) override;
  bool Query() const override;
  void Synchronize() const override;
  // The point of the last Record; null when reached or never recorded.
  std::shared_ptr<CpuPoint> point() const;

 private:
  mutable std::mutex mu_;
  std::shared_ptr<CpuPoint> point_;
};

}  // namespace ofl
