// The six kinds of actor, one per TaskProto kind (COMPUTE, SOURCE, VARIABLE,
// SINK, BOXING, ACC), the BoxingFn hook BOXING calls, and the factory the
// Runtime builds them with (what each act does is below). Actors are created
// and wired by one thread; each acts on its own thread.
#pragma once

#include <tbb/task_arena.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "oneflow_lite/core/device_context.h"
#include "oneflow_lite/core/proto/plan.pb.h"
#include "runtime/actor.h"
#include "runtime/kernel_slots.h"

// The six kinds of actor, one per TaskProto kind, and the factory the
// Runtime builds them with. What each act does:
//   COMPUTE   calls its before-kernel hook, if set (SetBeforeKernel), then
//             runs the op's kernel for its rank's device type
//             (KernelRegistry) inside its rank's task_arena (holding one
//             of the runtime's KernelSlots while it runs, if any), with the
//             rank's device and its thread's stream in the KernelContext
//             (a CPU kernel needs the inline stream: it runs at once);
//             attrs from op_conf with the op's defaults filled in, the
//             iteration, and the logical shape/offset of output 0 (its
//             RegisterDesc's, or the physical shape at offset 0). A kernel
//             that rejects a value or throws (ops/kernel.h CallKernel)
//             fails the run with an error naming the task; with
//             RunContext::detect_anomaly a NaN or Inf output does too.
//   SOURCE    copies this iteration's fed tensor into its output slot
//             (DeviceContext::Copy on its thread's stream).
//   VARIABLE  nothing: its persistent one-slot register keeps its value; the
//             act only hands it to the readers of the next iteration.
//   SINK      nothing of its own; a fetch clones its input.
//   BOXING    calls the BoxingFn hook (runtime/boxing.h's RunBoxingStep
//             fits behind it) with its rank's device context and its
//             thread's stream; acts in the thread's boxing turn. The hook
//             runs on the calling thread and works on the device's memory:
//             on a device its work is enqueued on that stream (the act's
//             writes are ordered for the readers by the stream, as a
//             kernel's).
//   ACC       gradient accumulation: acts every iteration (micro-batch) and
//             sums its input into its output slot; its output register has
//             period k, so the slot goes on once per k acts, holding the
//             mean of the k inputs (runtime/actor.h, act ratios); the copy,
//             sums and 1/k scaling are its rank's DeviceContext's, on its
//             thread's stream (a device's memory never goes through the host).
// A task's period (TaskProto.period) makes it act once per that many
// iterations; COMPUTE kernels get the iteration of the first of them.
// Actors are created and wired by one thread; each acts on its own thread.

namespace ofl {

// runtime/boxing.h: the rank's device context and the actor's stream.
struct BoxingStream;

// Runs one BOXING task on its rank: reads `input` (an empty tensor when the
// task has no data input) and writes `*output` (null when it has none), both
// memory of the rank's device, ordered on `on.stream`, as runtime/boxing.h's
// RunBoxingStep does. Called from the task's actor thread; calls of
// different ranks run at the same time. Errors fail the run.
using BoxingFn = std::function<Status(const proto::TaskProto& task, const Tensor& input,
                                      Tensor* output, const BoxingStream& on)>;

// What the actors of one rank share.
struct RankEnv {
  tbb::task_arena* arena = nullptr;  // the rank's kernel threads
  const BoxingFn* boxing = nullptr;  // may point to an empty function
  DeviceContext* device = nullptr;   // the rank's device
  KernelSlots* slots = nullptr;      // shared by every rank: null when unbounded
};

// "matmul 'fc1'", "source 'x'", "boxing all_reduce 'y'": the task in errors.
std::string TaskDisplayName(const proto::TaskProto& task);

std::unique_ptr<Actor> MakeActor(const proto::TaskProto& task, const RankEnv& env);

// A COMPUTE actor calls `hook` at the start of every act, before its kernel
// runs, on its own thread (StepUndo::SaveBefore). Set between runs.
void SetBeforeKernel(Actor* compute, std::function<void()> hook);

// SOURCE actors take their tensors from here for the length of one run:
// feeds[step], or feeds[0] for every step when there is one.
void SetSourceFeeds(Actor* source, std::vector<const Tensor*> feeds);

}  // namespace ofl
