// ActorThread: one OS thread per (rank, stream) that owns the actors bound
// to it, with a mailbox other threads post to and a local queue for messages
// between its own actors (which never take a lock). It lives as long as the
// Runtime: between runs it sleeps; during a run it handles messages until
// all of its actors are done, the run fails, or no message arrived for the
// run's timeout (then it fails the run with an error naming the rank, the
// task, the op and the register it waited for).
//
// Thread safety: Post() and Wake() from any thread; BeginRun() from the
// caller while the thread sleeps; everything else on the thread itself.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "oneflow_lite/core/stream.h"
#include "runtime/actor.h"
#include "runtime/run_context.h"

// Kernel threads: each rank's kernels run in that rank's oneTBB task_arena
// (runtime.h documents the share); this thread also sets OpenMP's thread
// count (oneDNN's pool, a per-thread setting) to the rank's share.
//
// Device stream: each thread owns one Stream of its rank's device
// (oneflow_lite/core/stream.h), the stream its actors' work goes to: a CPU
// inline stream, since CPU kernels run on this thread.
//
// BOXING actors of one thread act in plan order, cyclically (b0, b1, ..., b0
// of the next iteration, ...), so the collectives of every rank's stream are
// called in the one order fixed at compile time (DESIGN.md section 7).

namespace ofl {

// Messages from other threads. Pop takes all of them at once.
class Mailbox {
 public:
  void Push(const Message& message);
  // Moves every message into `into`; spins up to `spin_us`, then blocks up
  // to `timeout`. False on timeout.
  bool PopAll(std::deque<Message>* into, std::chrono::milliseconds timeout, int spin_us);
  void Clear();

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Message> queue_;
  std::atomic<size_t> size_{0};
  bool waiting_ = false;
};

class ActorThread {
 public:
  // `kernel_threads`: the OpenMP share of this thread's rank;
  // `device_stream`: a stream of the rank's device (not null).
  ActorThread(int64_t rank, int64_t stream, int kernel_threads, int spin_us,
              std::unique_ptr<Stream> device_stream);
  ~ActorThread();  // ends the OS thread (never during a run)
  ActorThread(const ActorThread&) = delete;
  ActorThread& operator=(const ActorThread&) = delete;

  void AddActor(Actor* actor);  // before Start
  void Start();
  // Caller thread, while no actor thread runs: clears the queues. Every
  // thread is reset before any starts, or a started one's message to a
  // thread not yet reset would be lost.
  void ResetForRun();
  // Caller thread, after ResetForRun of every thread: starts the run.
  void BeginRun(RunContext* run);

  void Post(const Message& message) { mailbox_.Push(message); }  // any thread
  void PushLocal(const Message& message) { local_.push_back(message); }
  void Wake() { mailbox_.Push(Message{}); }

  bool IsBoxingTurn(const Actor* actor) const { return boxing_order_[boxing_turn_] == actor; }
  void AdvanceBoxingTurn();
  void RecordAct(const ActRecord& record) { records_.push_back(record); }
  std::vector<ActRecord> TakeRecords() { return std::move(records_); }

  int64_t rank() const { return rank_; }
  int64_t stream() const { return stream_; }  // the plan's stream id
  Stream* device_stream() const { return device_stream_.get(); }

 private:
  void Main();
  void Loop(RunContext* run);
  void FailOnTimeout(RunContext* run);

  const int64_t rank_;
  const int64_t stream_;
  const int kernel_threads_;
  const int spin_us_;
  const std::unique_ptr<Stream> device_stream_;
  std::vector<Actor*> actors_;
  std::vector<Actor*> boxing_order_;
  size_t boxing_turn_ = 0;
  Mailbox mailbox_;
  std::deque<Message> local_;
  std::vector<ActRecord> records_;

  std::mutex control_mu_;
  std::condition_variable control_cv_;
  RunContext* pending_run_ = nullptr;
  bool shutdown_ = false;
  std::thread thread_;
};

}  // namespace ofl
