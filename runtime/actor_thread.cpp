// The message loop of runtime/actor_thread.h and RunContext's shared state.
#include "runtime/actor_thread.h"

#include <omp.h>

#include "oneflow_lite/core/caching_allocator.h"
#include "oneflow_lite/core/proto/plan.pb.h"

namespace ofl {

void RunContext::Fail(Status status) {
  CHECK(!status.ok());
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!error_.ok()) return;  // the first error wins; the rest follow from it
    error_ = status;
  }
  stopped.store(true);
  for (ActorThread* t : threads) t->Wake();
  if (on_failure != nullptr && *on_failure) (*on_failure)(status);
}

void RunContext::ThreadFinished() {
  std::lock_guard<std::mutex> lock(mu_);
  if (--running_ == 0) cv_.notify_all();
}

void RunContext::WaitAllFinished() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return running_ == 0; });
}

void Mailbox::Push(const Message& message) {
  bool wake;
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(message);
    size_.store(queue_.size(), std::memory_order_release);
    wake = waiting_;
  }
  if (wake) cv_.notify_one();
}

bool Mailbox::PopAll(std::deque<Message>* into, std::chrono::milliseconds timeout, int spin_us) {
  if (spin_us > 0 && size_.load(std::memory_order_acquire) == 0) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(spin_us);
    for (int i = 1; size_.load(std::memory_order_acquire) == 0; ++i) {
      if (i % 64 == 0 && std::chrono::steady_clock::now() > until) break;
    }
  }
  std::unique_lock<std::mutex> lock(mu_);
  if (queue_.empty()) {
    waiting_ = true;
    const bool got = cv_.wait_for(lock, timeout, [&] { return !queue_.empty(); });
    waiting_ = false;
    if (!got) return false;
  }
  into->insert(into->end(), queue_.begin(), queue_.end());
  queue_.clear();
  size_.store(0, std::memory_order_release);
  return true;
}

void Mailbox::Clear() {
  std::lock_guard<std::mutex> lock(mu_);
  queue_.clear();
  size_.store(0, std::memory_order_release);
}

ActorThread::ActorThread(int64_t rank, int64_t stream, int kernel_threads, int spin_us,
                         std::unique_ptr<Stream> device_stream)
    : rank_(rank),
      stream_(stream),
      kernel_threads_(kernel_threads),
      spin_us_(spin_us),
      device_stream_(std::move(device_stream)) {
  CHECK(device_stream_ != nullptr) << "rank " << rank << " stream " << stream;
}

ActorThread::~ActorThread() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(control_mu_);
    CHECK(pending_run_ == nullptr) << "actor thread destroyed during a run";
    shutdown_ = true;
  }
  control_cv_.notify_all();
  thread_.join();
}

void ActorThread::AddActor(Actor* actor) {
  CHECK(!thread_.joinable()) << "actors are added before the thread starts";
  actors_.push_back(actor);
  actor->set_thread(this);
  if (actor->task().kind() == proto::TaskProto::BOXING) boxing_order_.push_back(actor);
}

void ActorThread::Start() {
  thread_ = std::thread([this] { Main(); });
}

void ActorThread::ResetForRun() {
  mailbox_.Clear();
  local_.clear();
  records_.clear();
  boxing_turn_ = 0;
}

void ActorThread::BeginRun(RunContext* run) {
  {
    std::lock_guard<std::mutex> lock(control_mu_);
    CHECK(pending_run_ == nullptr) << "a run is already in progress";
    pending_run_ = run;
  }
  control_cv_.notify_all();
}

void ActorThread::AdvanceBoxingTurn() {
  boxing_turn_ = boxing_turn_ + 1 == boxing_order_.size() ? 0 : boxing_turn_ + 1;
  PushLocal(Message{boxing_order_[boxing_turn_], Message::kWake, 0, 0});
}

void ActorThread::Main() {
  // oneDNN runs on OpenMP, whose thread count is a per-thread setting.
  omp_set_num_threads(kernel_threads_);
  device_stream_->BindToThread();
  // What this thread allocates (kernel and boxing scratch) belongs to its
  // stream: a caching allocator reuses it at once on this stream, and on
  // another only after events (core/caching_allocator.h).
  CachingAllocator::StreamScope scope(device_stream_.get());
  for (;;) {
    RunContext* run;
    {
      std::unique_lock<std::mutex> lock(control_mu_);
      control_cv_.wait(lock, [&] { return shutdown_ || pending_run_ != nullptr; });
      if (shutdown_) return;
      run = pending_run_;
    }
    Loop(run);
    {
      std::lock_guard<std::mutex> lock(control_mu_);
      pending_run_ = nullptr;
    }
    run->ThreadFinished();
  }
}

void ActorThread::Loop(RunContext* run) {
  for (Actor* a : actors_) a->ActUntilFail();
  int64_t remaining = 0;
  for (Actor* a : actors_) remaining += a->done() ? 0 : 1;
  while (remaining > 0 && !run->stopped.load(std::memory_order_relaxed)) {
    if (local_.empty() && !mailbox_.PopAll(&local_, run->timeout, spin_us_)) {
      FailOnTimeout(run);
      return;
    }
    while (!local_.empty()) {
      const Message message = local_.front();
      local_.pop_front();
      Actor* actor = message.dst;
      if (actor == nullptr) break;  // a wake-up: look at the stop flag
      const bool was_done = actor->done();
      actor->Handle(message);
      if (!was_done && actor->done()) --remaining;
      if (run->stopped.load(std::memory_order_relaxed)) return;
    }
  }
}

void ActorThread::FailOnTimeout(RunContext* run) {
  // Prefer an actor that waits on another thread: its wait names the cause;
  // the actors behind it on this thread only wait on it.
  Actor* culprit = nullptr;
  for (Actor* a : actors_) {
    if (a->done()) continue;
    if (culprit == nullptr) culprit = a;
    if (a->WaitsOnOtherThread()) {
      culprit = a;
      break;
    }
  }
  CHECK(culprit != nullptr);
  run->Fail(Status(StatusCode::kTimeout,
                   StrCat("rank ", rank_, ": task ", culprit->task().id(), " (", culprit->name(),
                          ") waited ", run->timeout.count(), " ms for ", culprit->DescribeWait())));
}

}  // namespace ofl
