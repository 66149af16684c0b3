// Stream and Event: ordered work on one device, and the points that order
// two streams (DESIGN.md 7b), with CUDA's semantics so that a CUDA stream
// wraps a cudaStream_t and an Event a cudaEvent_t. Created by a
// DeviceContext (device_context.h). Thread safety: Enqueue, Wait and
// Synchronize of one stream from one thread at a time; Record, Query and
// Synchronize of an event from any thread.
#pragma once

#include <functional>

#include "oneflow_lite/core/device.h"

// Stream and Event: ordered work on one device, and the points that order
// two streams (DESIGN.md 7b), with CUDA's semantics so that a CUDA stream
// wraps a cudaStream_t and an Event a cudaEvent_t:
//   - work enqueued on one stream runs in the order it was enqueued;
//   - event->Record(a) marks the point after everything enqueued on stream
//     a so far; b->Wait(*event) makes everything enqueued on b afterwards
//     run after that point (the host does not block, unless b runs work on
//     the host's own thread: see CpuInlineStream);
//   - event->Query() says whether the recorded point was reached (true for
//     an event never recorded), event->Synchronize() blocks the caller until
//     it is; stream->Synchronize() until all of the stream's work finished.
// A Wait sees the Record that happened before it (by the caller's order:
// the actor handshake hands a register's "ready" message over after the
// producer's Record, so the consumer's Wait sees it).
//
// Kernels do not call Enqueue: a CPU kernel runs on its calling thread (the
// compute actor's inline stream); a CUDA kernel launches onto
// KernelContext::stream. Enqueue is for host work that must keep a stream's
// order (tests, host callbacks).
//
// Streams and events are created by a DeviceContext (device_context.h) and
// are only combined within one device type. Thread safety: Enqueue, Wait
// and Synchronize of one stream from one thread at a time; Record, Query and
// Synchronize of an event from any thread.

namespace ofl {

class Event;

class Stream {
 public:
  virtual ~Stream() = default;
  virtual const Device& device() const = 0;
  // True when work runs at once on the calling thread (Enqueue returns after
  // it ran): a CPU stream of the actor thread that calls it. Events recorded
  // on it are complete at once.
  virtual bool is_inline() const = 0;
  // Runs `work` after the work enqueued before it. `work` must not throw.
  virtual void Enqueue(std::function<void()> work) = 0;
  // Work enqueued on this stream after this call runs after `event`'s point.
  virtual void Wait(const Event& event) = 0;
  // Blocks the caller until every piece of work enqueued so far has run.
  virtual void Synchronize() = 0;
  // Called once by the thread that will use this stream (an actor thread)
  // before its first use: a CUDA stream makes its GPU current there.
  virtual void BindToThread() {}
};

class Event {
 public:
  virtual ~Event() = default;
  // Marks the point after all work enqueued on `stream` so far; replaces the
  // point of an earlier Record. `stream` is of this event's device type.
  virtual void Record(Stream* stream) = 0;
  // The recorded point was reached (or nothing was recorded).
  virtual bool Query() const = 0;
  // Blocks the caller until Query() is true.
  virtual void Synchronize() const = 0;
};

}  // namespace ofl
