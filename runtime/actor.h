// Actor: one task of a Plan, driven by messages (DESIGN.md section 7). An
// actor acts when every register it reads (data inputs and ctrl_inputs) has
// a ready slot and every register it writes has a free slot; after acting it
// tells each consumer "ready" and each producer "free". There is no central
// scheduler: an actor's state changes only when its owning ActorThread hands
// it a message, so all of its state belongs to that one thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "oneflow_lite/core/proto/plan.pb.h"
#include "oneflow_lite/core/status.h"
#include "oneflow_lite/core/stream.h"
#include "oneflow_lite/core/tensor.h"

// The register handshake (OneFlow's, `ActUntilFail`), for a register R with
// two slots written by P and read by C1 and C2:
//
//     P (producer, owns R's slots)     C1 (consumer)            C2 (consumer)
//     | free: {0,1}                    |                        |
//     |-- act, writes slot 0           |                        |
//     |-- Ready(R,0) ----------------->|                        |
//     |-- Ready(R,0) ------------------------------------------>|
//     |-- act, writes slot 1 (iteration i+1 while C1, C2 still read slot 0)
//     |-- Ready(R,1) ----------------->|-- act, reads slot 0    |
//     |<------------------ Free(R,0) --|                        |-- act, reads slot 0
//     |<---------------------------------------------- Free(R,0)|
//     | slot 0 free again once every consumer has freed it: P may act again
//
// A slot is free when all consumers have returned it; a consumer reads slots
// in the order they became ready, so iterations stay in order. A register
// with no consumer is free again as soon as its producer acted. Control
// registers (a task's ctrl_outputs, other tasks' ctrl_inputs) carry no data:
// the same handshake orders tasks without handing a buffer to any kernel.
//
// Act ratios (micro-batches, gradient accumulation over k of them): a task
// of `period` p acts once per p iterations; a register of period q holds one
// value per q iterations. A consumer of period p reads each ready slot q/p
// times before it frees it (a variable, period k, is read by every
// micro-batch's forward); a producer of period p writes into one free slot
// for q/p acts and sends Ready after the last (ACC sums k gradients into its
// slot; a reader's ctrl register of period k tells the update, period k,
// that the reader's k-th micro-batch of the step is done). For k = 2:
//
//     VARIABLE w (p=2)     matmul (p=1)          ACC g (p=1, out q=2)   update (p=2)
//     |-- Ready(w,0) ----->|-- act mb0 (reuse 1) |                      |
//     |                    |-- act mb1 (reuse 2) |-- act mb0: g = x0    |
//     |<---- Free(w,0) ----|-- Ready(ctrl) ---------------------------->|
//     |                    |                     |-- act mb1: g=(g+x1)/2|
//     |                    |                     |-- Ready(g,0) ------->|-- act, frees w
//     |<-------------------------------------------------- Free(w,0) ---|
//     |-- act (step 2): Ready(w,0) ... (w's one slot is held until the update acted)
//
// Streams: every actor's work goes to its thread's device stream. A register
// whose producer and consumer sit on different streams is handed over by
// events, per slot: the producer records `written` on its stream after the
// act that filled the slot (before its Ready), the consumer's stream waits
// on it before the act that reads the slot; the consumer records `read`
// after that act (before its Free), the producer's stream waits on it before
// writing the slot again. On a CPU inline stream the act has finished when
// Record is called, so both are complete at once and Wait returns (no lock
// taken beyond the event's own, no allocation); on a device stream they
// order the queued kernels without blocking the actor thread. Registers
// within one stream need none: the stream's order is the act order.

namespace ofl {

class Actor;
class DeviceContext;
class ActorThread;
struct RunContext;

// A register as the runtime holds it: num_slots buffers on one rank,
// allocated once by that rank's device Allocator and owned by the Runtime.
struct RuntimeRegister {
  const proto::RegisterDesc* desc = nullptr;
  std::vector<Tensor> slots;
  bool control = false;  // in some task's ctrl_outputs: never handed to a kernel
};

struct Message {
  enum Kind : int32_t { kReady, kFree, kWake };
  Actor* dst = nullptr;  // nullptr: only wakes the thread (stop)
  Kind kind = kWake;
  int32_t index = 0;  // kReady: dst's input index; kFree: dst's output index
  int32_t slot = 0;
};

// A FIFO of slot indices with room for every slot of one register.
class SlotQueue {
 public:
  void Reset(int32_t capacity, bool full);
  bool empty() const { return size_ == 0; }
  int32_t size() const { return size_; }
  int32_t front() const { return ring_[head_]; }
  void Pop();
  void Push(int32_t slot);

 private:
  std::vector<int32_t> ring_;
  int32_t head_ = 0;
  int32_t size_ = 0;
};

class Actor {
 public:
  // `name` describes the task in errors and traces: "matmul 'fc1'".
  Actor(const proto::TaskProto& task, std::string name);
  virtual ~Actor() = default;
  Actor(const Actor&) = delete;
  Actor& operator=(const Actor&) = delete;

  // Wiring, before any run. Registers are added in the task's argument
  // order; `data_arg` false for a ctrl input. A register read twice is one
  // input (one slot per act) that feeds both arguments. Control registers
  // (ctrl_outputs) are written by no kernel.
  void AddInput(RuntimeRegister* reg, bool data_arg);
  void AddOutput(RuntimeRegister* reg);
  // After both ends were added: `producer` sends Ready for `reg` to
  // `consumer`, which sends Free back.
  static void Connect(Actor* producer, RuntimeRegister* reg, Actor* consumer);
  // Clone data input (from_input) or data output `arg` after each act into
  // (*into)[step], a host copy made by `device` (the rank's); cleared after
  // every run.
  void AddFetch(bool from_input, int arg, std::vector<Tensor>* into, DeviceContext* device);
  void ClearFetches() { fetches_.clear(); }
  void set_thread(ActorThread* thread) { thread_ = thread; }
  // After every actor is connected and has its thread: the events of the
  // registers this actor hands to or takes from another stream (see the
  // notes before the namespace), made by the rank's device.
  void CreateEvents(DeviceContext* device);
  // Checks arity and looks up what the kind needs (kernels, hooks).
  virtual Status Prepare() { return Status::OK(); }

  // Per run, on the caller's thread before the actor threads start.
  void BeginRun(RunContext* run);
  // On the owning thread: one message, then act while possible.
  void Handle(const Message& message);
  // Acts while every input has a ready slot and every output a free one.
  void ActUntilFail();
  // Acted num_iterations / period times and every output slot came back.
  bool done() const { return acts_ == num_iterations_ && outputs_busy_ == 0; }
  // What the actor waits for now: "input register 'x'", ...
  std::string DescribeWait() const;
  // True when that wait is on a register another thread produces or frees.
  bool WaitsOnOtherThread() const;

  const proto::TaskProto& task() const { return task_; }
  const std::string& name() const { return name_; }
  ActorThread* thread() const { return thread_; }
  int64_t acts() const { return acts_; }

 protected:
  // Runs one act of this kind, step `step` of the run (iteration
  // iteration(step)), on the slots chosen for it.
  virtual Status Act(int64_t step) = 0;
  // Extra condition before acting (the boxing turn of the thread); what it
  // waits for when it holds the actor back.
  virtual bool MayAct() const { return true; }
  virtual std::string DescribeGate() const { return "its turn"; }
  virtual void AfterAct() {}
  // "rank 1: task 4 (relu 'r'): " + message, keeping the code.
  Status Named(StatusCode code, const std::string& message) const;

  int num_data_inputs() const { return static_cast<int>(data_inputs_.size()); }
  int num_data_outputs() const { return static_cast<int>(data_outputs_.size()); }
  // The tensors of this act: data argument i (inputs in argument order).
  Tensor* data_input(int i) { return current_inputs_[data_inputs_[i]]; }
  Tensor* data_output(int i) { return current_outputs_[data_outputs_[i]]; }
  const RuntimeRegister* data_input_register(int i) const { return inputs_[data_inputs_[i]].reg; }
  const RuntimeRegister* data_output_register(int i) const {
    return outputs_[data_outputs_[i]].reg;
  }
  RunContext* run() const { return run_; }
  int64_t first_iteration() const { return first_iteration_; }
  // The iteration (micro-batch counter) of act `step`: the first of its period.
  int64_t iteration(int64_t step) const { return first_iteration_ + step * period_; }
  int64_t period() const { return period_; }
  // Acts per value of data output i (its register's period / this task's).
  int32_t data_output_acts_per_value(int i) const {
    return outputs_[data_outputs_[i]].acts_per_value;
  }

  const proto::TaskProto& task_;
  std::vector<Tensor*> current_inputs_;   // per input: the slot of this act
  std::vector<Tensor*> current_outputs_;  // per output: the slot of this act

 private:
  struct Input {
    RuntimeRegister* reg = nullptr;
    Actor* producer = nullptr;
    int32_t producer_output = 0;
    SlotQueue ready;
    int32_t reads_per_slot = 1;  // register period / this task's period
    int32_t reads = 0;           // acts that read the front slot so far
  };
  struct Consumer {
    Actor* actor = nullptr;
    int32_t input = 0;  // the consumer's input index
  };
  struct Output {
    RuntimeRegister* reg = nullptr;
    std::vector<Consumer> consumers;
    std::vector<int32_t> pending;  // per slot: consumers yet to free it
    SlotQueue free;
    int32_t acts_per_value = 1;  // register period / this task's period
    int32_t writes = 0;          // acts that wrote the front slot so far
  };

  bool ReadyToAct() const;
  // Before an act: this stream waits for the events of the slots it takes
  // from other streams. After: it records the events of the slots it hands on.
  void WaitForOtherStreams(Stream* stream);
  void Send(Actor* dst, Message::Kind kind, int32_t index, int32_t slot);
  int FindInput(const RuntimeRegister* reg) const;
  int FindOutput(const RuntimeRegister* reg) const;

  std::string name_;
  ActorThread* thread_ = nullptr;
  RunContext* run_ = nullptr;
  std::vector<Input> inputs_;
  std::vector<Output> outputs_;
  std::vector<int> data_inputs_;   // argument order -> index in inputs_
  std::vector<int> data_outputs_;  // argument order -> index in outputs_
  struct Fetch {
    bool from_input = false;
    int arg = 0;
    std::vector<Tensor>* into = nullptr;
    DeviceContext* device = nullptr;
  };
  std::vector<Fetch> fetches_;
  int64_t num_iterations_ = 0;
  int64_t first_iteration_ = 0;
  int64_t period_ = 1;  // iterations per act
  int64_t acts_ = 0;
  int64_t outputs_busy_ = 0;  // slots handed to consumers, not yet all freed
  // The events of registers between this actor's stream and another's (see
  // the notes before the namespace), per slot; kept apart so that the hot structs stay
  // as small as they were. Null: every register stays on this stream.
  struct StreamEvents {
    // Per input: recorded after the reads of a slot, before Free; empty
    // when the producer is on this stream.
    std::vector<std::vector<std::unique_ptr<Event>>> read;
    // Per output: recorded after the write of a slot, before Ready; empty
    // when every consumer is on this stream.
    std::vector<std::vector<std::unique_ptr<Event>>> written;
  };
  std::unique_ptr<StreamEvents> events_;
};

}  // namespace ofl
