// Communicator: the collectives one rank of a group takes part in (DESIGN.md
// sections 7 and 7b). Implementations: in-process groups of one process's
// virtual devices (runtime/inprocess_communicator.h), Gloo over TCP for
// groups that span processes or hosts (runtime/gloo_communicator.h); NCCL for
// CUDA groups across processes (runtime/nccl_communicator.h). Buffers are
// memory of the rank's device. Streams: host communicators (in-process, Gloo,
// and in-process groups over device copies) run a call synchronously on the
// calling thread, so the caller finishes the work its stream owes the buffers
// first; a device-native one (NCCL: enqueues_on_stream()) enqueues its calls on
// the stream given by set_stream, after the work already there.
#pragma once

#include <cstdint>
#include <string>

#include "oneflow_lite/core/data_type.h"
#include "oneflow_lite/core/status.h"
#include "oneflow_lite/core/stream.h"

// Every rank of a group must call the same collectives in the same order (fixed
// at compile time). A call blocks until its peers arrive or the timeout passes,
// then returns an error that names the rank and the collective. One
// Communicator object serves one rank and is used by one thread at a time.

namespace ofl {

class Communicator {
 public:
  virtual ~Communicator() = default;

  virtual int64_t rank() const = 0;  // position in the group, 0..size-1
  virtual int64_t size() const = 0;

  // True when calls are enqueued on the set_stream stream (ordered after the
  // work enqueued there before the call, and before the work enqueued after
  // it; a call still returns with its output written). False: the call runs
  // on the calling thread, whose stream must have finished the buffers'
  // earlier work. Later calls use `stream` (of this rank's device; null: the
  // communicator's own); host communicators ignore it.
  virtual bool enqueues_on_stream() const { return false; }
  virtual void set_stream(Stream* /*stream*/) {}

  // Sums `count` elements of every rank's `buffer` into every rank's `buffer`.
  virtual Status AllReduce(void* buffer, int64_t count, DataType dtype, const std::string& tag) = 0;
  // Sums every rank's `input` (count elements) and leaves on rank r its
  // balanced part r (slicing.h BalancedPart over `count`) in `output`. The
  // host communicators (in-process, Gloo) sum each element of part r as
  // rank r's own addend, then its peers' in rank order, wherever it lies in
  // the part, so a reduce-scatter of several tensors' shards laid side by
  // side gives each tensor's own bits (graph/gradient_buckets.h); NCCL's
  // order is its own.
  virtual Status ReduceScatter(const void* input, void* output, int64_t count, DataType dtype,
                               const std::string& tag) = 0;
  // Concatenates every rank's `input` (counts[r] elements) into `output`.
  virtual Status AllGather(const void* input, void* output, const int64_t* counts, DataType dtype,
                           const std::string& tag) = 0;
  // Rank r sends send_counts[q] elements (consecutive in `input`, in rank
  // order) to rank q and receives recv_counts[q] from q into `output`.
  virtual Status AllToAll(const void* input, const int64_t* send_counts, void* output,
                          const int64_t* recv_counts, DataType dtype, const std::string& tag) = 0;
  // Copies `root`'s buffer into every rank's buffer.
  virtual Status Broadcast(void* buffer, int64_t count, DataType dtype, int64_t root,
                           const std::string& tag) = 0;
  // Point to point; a Send is matched by the peer's Recv with the same tag.
  virtual Status Send(const void* buffer, int64_t count, DataType dtype, int64_t peer,
                      const std::string& tag) = 0;
  virtual Status Recv(void* buffer, int64_t count, DataType dtype, int64_t peer,
                      const std::string& tag) = 0;

  // Bytes that left this rank's buffers into another rank's, counted by the
  // communicator itself (not taken from any plan).
  virtual int64_t bytes_sent() const = 0;

  // From any thread: wakes a blocked call with an error giving `why` (an
  // in-process group wakes all its ranks); later calls fail at once until
  // the group is reset (in-process) or built anew (Gloo).
  virtual void Abort(const std::string& why) = 0;
};

}  // namespace ofl
