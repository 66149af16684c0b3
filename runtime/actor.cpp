// The register handshake of runtime/actor.h.
#include "runtime/actor.h"

#include <algorithm>

#include "oneflow_lite/core/device_context.h"
#include "runtime/actor_thread.h"
#include "runtime/run_context.h"

namespace ofl {

void SlotQueue::Reset(int32_t capacity, bool full) {
  ring_.resize(capacity);
  head_ = 0;
  size_ = full ? capacity : 0;
  for (int32_t i = 0; i < capacity; ++i) ring_[i] = i;
}

void SlotQueue::Pop() {
  DCHECK_GT(size_, 0);
  head_ = head_ + 1 == static_cast<int32_t>(ring_.size()) ? 0 : head_ + 1;
  --size_;
}

void SlotQueue::Push(int32_t slot) {
  CHECK_LT(size_, static_cast<int32_t>(ring_.size())) << "more slots returned than exist";
  int32_t tail = head_ + size_;
  if (tail >= static_cast<int32_t>(ring_.size())) tail -= static_cast<int32_t>(ring_.size());
  ring_[tail] = slot;
  ++size_;
}

namespace {

int64_t PeriodOf(int64_t period) { return period > 1 ? period : 1; }

// How many acts of a task of `task_period` one value of `reg` spans (the
// plan checks make it a whole number: runtime/plan_check.h).
int32_t ActsPerValue(const RuntimeRegister* reg, int64_t task_period) {
  return static_cast<int32_t>(std::max<int64_t>(1, PeriodOf(reg->desc->period()) / task_period));
}

}  // namespace

Actor::Actor(const proto::TaskProto& task, std::string name)
    : task_(task), name_(std::move(name)), period_(PeriodOf(task.period())) {}

int Actor::FindInput(const RuntimeRegister* reg) const {
  for (size_t i = 0; i < inputs_.size(); ++i) {
    if (inputs_[i].reg == reg) return static_cast<int>(i);
  }
  return -1;
}

int Actor::FindOutput(const RuntimeRegister* reg) const {
  for (size_t i = 0; i < outputs_.size(); ++i) {
    if (outputs_[i].reg == reg) return static_cast<int>(i);
  }
  return -1;
}

void Actor::AddInput(RuntimeRegister* reg, bool data_arg) {
  int index = FindInput(reg);
  if (index < 0) {
    index = static_cast<int>(inputs_.size());
    inputs_.emplace_back();
    inputs_.back().reg = reg;
    inputs_.back().reads_per_slot = ActsPerValue(reg, period_);
    current_inputs_.push_back(nullptr);
  }
  if (data_arg) data_inputs_.push_back(index);
}

void Actor::AddOutput(RuntimeRegister* reg) {
  CHECK_LT(FindOutput(reg), 0) << name_ << " writes register '" << reg->desc->name() << "' twice";
  outputs_.emplace_back();
  outputs_.back().reg = reg;
  outputs_.back().acts_per_value = ActsPerValue(reg, period_);
  current_outputs_.push_back(nullptr);
  if (!reg->control) data_outputs_.push_back(static_cast<int>(outputs_.size()) - 1);
}

void Actor::Connect(Actor* producer, RuntimeRegister* reg, Actor* consumer) {
  const int output = producer->FindOutput(reg);
  const int input = consumer->FindInput(reg);
  CHECK(output >= 0 && input >= 0) << "connect " << producer->name_ << " -> " << consumer->name_;
  producer->outputs_[output].consumers.push_back({consumer, input});
  consumer->inputs_[input].producer = producer;
  consumer->inputs_[input].producer_output = output;
}

void Actor::CreateEvents(DeviceContext* device) {
  auto events = std::make_unique<StreamEvents>();
  bool any = false;
  events->read.resize(inputs_.size());
  for (size_t i = 0; i < inputs_.size(); ++i) {
    const Input& in = inputs_[i];
    if (in.producer == nullptr || in.producer->thread_ == thread_) continue;
    for (size_t s = 0; s < in.reg->slots.size(); ++s)
      events->read[i].push_back(device->CreateEvent());
    any = true;
  }
  events->written.resize(outputs_.size());
  for (size_t o = 0; o < outputs_.size(); ++o) {
    bool other_stream = false;
    for (const Consumer& c : outputs_[o].consumers) other_stream |= c.actor->thread_ != thread_;
    if (!other_stream) continue;
    for (size_t s = 0; s < outputs_[o].reg->slots.size(); ++s) {
      events->written[o].push_back(device->CreateEvent());
    }
    any = true;
  }
  events_ = any ? std::move(events) : nullptr;
}

void Actor::WaitForOtherStreams(Stream* stream) {
  for (size_t i = 0; i < inputs_.size(); ++i) {
    if (events_->read[i].empty()) continue;  // the producer is on this stream
    const Input& in = inputs_[i];
    stream->Wait(*in.producer->events_->written[in.producer_output][in.ready.front()]);
  }
  for (size_t o = 0; o < outputs_.size(); ++o) {
    const Output& out = outputs_[o];
    if (events_->written[o].empty() || out.writes != 0) continue;  // this stream, or slot in use
    const int32_t slot = out.free.front();
    for (const Consumer& c : out.consumers) {
      const StreamEvents* reader = c.actor->events_.get();
      if (reader != nullptr && !reader->read[c.input].empty()) {
        stream->Wait(*reader->read[c.input][slot]);
      }
    }
  }
}

void Actor::AddFetch(bool from_input, int arg, std::vector<Tensor>* into, DeviceContext* device) {
  CHECK_LT(arg, from_input ? num_data_inputs() : num_data_outputs());
  CHECK(device != nullptr) << name_ << ": a fetch needs its rank's device";
  fetches_.push_back({from_input, arg, into, device});
}

void Actor::BeginRun(RunContext* run) {
  run_ = run;
  num_iterations_ = run->num_iterations / period_;
  first_iteration_ = run->first_iteration;
  acts_ = 0;
  outputs_busy_ = 0;
  for (Input& in : inputs_) {
    CHECK(in.producer != nullptr) << name_ << ": register '" << in.reg->desc->name()
                                  << "' has no producer";
    in.ready.Reset(static_cast<int32_t>(in.reg->slots.size()), false);
    in.reads = 0;
  }
  for (Output& out : outputs_) {
    const int32_t slots = static_cast<int32_t>(out.reg->slots.size());
    out.free.Reset(slots, true);
    out.pending.assign(slots, 0);
    out.writes = 0;
  }
}

void Actor::Handle(const Message& message) {
  switch (message.kind) {
    case Message::kReady:
      inputs_[message.index].ready.Push(message.slot);
      break;
    case Message::kFree: {
      Output& out = outputs_[message.index];
      if (--out.pending[message.slot] == 0) {
        out.free.Push(message.slot);
        --outputs_busy_;
      }
      break;
    }
    case Message::kWake:
      break;
  }
  ActUntilFail();
}

bool Actor::ReadyToAct() const {
  if (acts_ == num_iterations_) return false;
  for (const Input& in : inputs_) {
    if (in.ready.empty()) return false;
  }
  for (const Output& out : outputs_) {
    if (out.free.empty()) return false;
  }
  return MayAct();
}

void Actor::Send(Actor* dst, Message::Kind kind, int32_t index, int32_t slot) {
  const Message message{dst, kind, index, slot};
  if (dst->thread_ == thread_) {
    thread_->PushLocal(message);
  } else {
    dst->thread_->Post(message);
  }
}

void Actor::ActUntilFail() {
  while (ReadyToAct()) {
    if (run_->stopped.load(std::memory_order_relaxed)) return;
    for (size_t i = 0; i < inputs_.size(); ++i) {
      current_inputs_[i] = &inputs_[i].reg->slots[inputs_[i].ready.front()];
    }
    for (size_t i = 0; i < outputs_.size(); ++i) {
      current_outputs_[i] = &outputs_[i].reg->slots[outputs_[i].free.front()];
    }
    const int64_t step = acts_;
    const int64_t start_ns = run_->record_acts ? run_->NowNs() : 0;
    Stream* stream = events_ ? thread_->device_stream() : nullptr;
    if (events_) WaitForOtherStreams(stream);
    Status status = Act(step);
    if (run_->record_acts) {
      thread_->RecordAct(
          {task_.id(), task_.rank(), task_.stream(), iteration(step), start_ns, run_->NowNs()});
    }
    if (!status.ok()) {
      run_->Fail(std::move(status));
      return;
    }
    for (const Fetch& f : fetches_) {
      const Tensor* t = f.from_input ? data_input(f.arg) : data_output(f.arg);
      thread_->device_stream()->Synchronize();  // the act's writes (inline: done already)
      (*f.into)[iteration(step) - first_iteration_ + period_ - 1] = f.device->CloneToHost(*t);
    }
    ++acts_;
    for (size_t o = 0; o < outputs_.size(); ++o) {
      Output& out = outputs_[o];
      if (++out.writes < out.acts_per_value) continue;  // the value spans more acts
      out.writes = 0;
      const int32_t slot = out.free.front();
      out.free.Pop();
      if (out.consumers.empty()) {
        out.free.Push(slot);
        continue;
      }
      if (events_ && !events_->written[o].empty()) events_->written[o][slot]->Record(stream);
      out.pending[slot] = static_cast<int32_t>(out.consumers.size());
      ++outputs_busy_;
      for (const Consumer& c : out.consumers) Send(c.actor, Message::kReady, c.input, slot);
    }
    for (size_t i = 0; i < inputs_.size(); ++i) {
      Input& in = inputs_[i];
      if (++in.reads < in.reads_per_slot) continue;  // read again by the next act
      in.reads = 0;
      const int32_t slot = in.ready.front();
      in.ready.Pop();
      if (events_ && !events_->read[i].empty()) events_->read[i][slot]->Record(stream);
      Send(in.producer, Message::kFree, in.producer_output, slot);
    }
    AfterAct();
  }
}

std::string Actor::DescribeWait() const {
  if (acts_ < num_iterations_) {
    for (const Input& in : inputs_) {
      if (in.ready.empty()) {
        bool data = false;
        for (int i : data_inputs_) data |= inputs_[i].reg == in.reg;
        return StrCat(data ? "input" : "ctrl input", " register '", in.reg->desc->name(), "'");
      }
    }
    for (const Output& out : outputs_) {
      if (out.free.empty()) {
        return StrCat("a free slot of output register '", out.reg->desc->name(), "'");
      }
    }
    if (!MayAct()) return DescribeGate();
  }
  for (const Output& out : outputs_) {
    if (out.free.size() < static_cast<int32_t>(out.reg->slots.size())) {
      return StrCat("its consumers to free output register '", out.reg->desc->name(), "'");
    }
  }
  return "nothing";
}

bool Actor::WaitsOnOtherThread() const {
  if (acts_ == num_iterations_) return false;
  for (const Input& in : inputs_) {
    if (in.ready.empty()) return in.producer->thread_ != thread_;
  }
  for (const Output& out : outputs_) {
    if (!out.free.empty()) continue;
    for (const Consumer& c : out.consumers) {
      if (c.actor->thread_ != thread_) return true;
    }
    return false;
  }
  return false;
}

Status Actor::Named(StatusCode code, const std::string& message) const {
  return Status(code,
                StrCat("rank ", task_.rank(), ": task ", task_.id(), " (", name_, "): ", message));
}

}  // namespace ofl
