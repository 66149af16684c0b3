// NCCL communicator: the collectives of one rank of a group of processes,
// one GPU each (DESIGN.md 7b), behind the Communicator interface; built only
// with CUDA (OFL_HAVE_CUDA). Buffers are device memory of this rank's GPU.
//
// Thread safety: one thread calls the collectives; Abort, rank, size and
// bytes_sent from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "oneflow_lite/core/communicator.h"
#include "oneflow_lite/core/device.h"
#include "runtime/tcp_store.h"

// Rendezvous: every member process calls Create with the same group name and
// member list; group rank 0 makes the ncclUniqueId and sets it under
// "ofl/nccl/<group>/id" in the TcpStore (runtime/tcp_store.h), the others
// read it (waiting at most options.timeout). The communicator is
// non-blocking (ncclConfig_t.blocking = 0), so that its creation and every
// call can be bounded by a deadline.
//
// Calls: enqueued on the communicator's stream (set_stream: the boxing
// actor's; default: a stream of its own), then waited for on the calling
// thread, so a call returns with its output written, as the interface says
// (the caller's stream work before the call must be complete or ordered
// before the communicator's stream). Uneven balanced parts (slicing.h) are
// NCCL groups: reduce-scatter is one ncclReduce per part (root = the part's
// rank), all-gather one ncclBroadcast per part, all-to-all and send/recv
// ncclSend/ncclRecv pairs in ncclGroupStart/End (the own part of an
// all-to-all is a device copy). All-reduce is ncclAllReduce. NCCL matches
// calls by order, not by tag: the ranks of a group must call in one order
// (the plan's), and a tag only names the call in errors. bytes_sent() counts
// the same per-rank bytes as the in-process and Gloo communicators
// (all-reduce (n - own) + (p - 1) own elements, reduce-scatter n - own,
// all-gather (p - 1) own, all-to-all what goes to peers, broadcast (p - 1) n
// on the root), the bytes a ring or direct algorithm moves for this rank.
//
// Failure: a call past options.timeout, an NCCL asynchronous error (a lost
// peer) or Abort(why) (any thread) ends in ncclCommAbort: the blocked call
// returns an error naming this rank, the collective, its tag and the reason;
// every later call fails at once. The store is used only by Create.

namespace ofl {

struct NcclOptions {
  std::chrono::milliseconds timeout{30000};  // creation, and each call
};

class NcclCommunicator : public Communicator {
 public:
  // This process is world rank `world_rank`, one of `members` (distinct, in
  // group-rank order), and uses `device` (a CUDA device; error without one:
  // "cuda:0: no CUDA device").
  static Maybe<std::unique_ptr<NcclCommunicator>> Create(TcpStore* store, const std::string& group,
                                                         const std::vector<int64_t>& members,
                                                         int64_t world_rank, const Device& device,
                                                         const NcclOptions& options = {});
  ~NcclCommunicator() override;

  int64_t rank() const override { return rank_; }
  int64_t size() const override { return size_; }
  int64_t bytes_sent() const override { return bytes_sent_.load(); }
  // Later calls are enqueued on `stream` (a CUDA stream of this device); null:
  // the communicator's own stream.
  bool enqueues_on_stream() const override { return true; }
  void set_stream(Stream* stream) override;

  Status AllReduce(void* buffer, int64_t count, DataType dtype, const std::string& tag) override;
  Status ReduceScatter(const void* input, void* output, int64_t count, DataType dtype,
                       const std::string& tag) override;
  Status AllGather(const void* input, void* output, const int64_t* counts, DataType dtype,
                   const std::string& tag) override;
  Status AllToAll(const void* input, const int64_t* send_counts, void* output,
                  const int64_t* recv_counts, DataType dtype, const std::string& tag) override;
  Status Broadcast(void* buffer, int64_t count, DataType dtype, int64_t root,
                   const std::string& tag) override;
  Status Send(const void* buffer, int64_t count, DataType dtype, int64_t peer,
              const std::string& tag) override;
  Status Recv(void* buffer, int64_t count, DataType dtype, int64_t peer,
              const std::string& tag) override;
  void Abort(const std::string& why) override;

 private:
  struct Impl;
  NcclCommunicator(int64_t rank, int64_t size, std::unique_ptr<Impl> impl,
                   std::chrono::milliseconds timeout);
  // Fails at once after an abort; maps the dtype.
  Status Begin(const std::string& what, DataType dtype, int* nccl_dtype);
  // Ends the group (when `grouped`) and waits for the stream: OK, or the
  // error for `what` (and the communicator aborted).
  Status Finish(const std::string& what, bool grouped);
  Status Fail(const std::string& what, const std::string& reason);
  std::string What(const char* collective, const std::string& tag) const;

  const int64_t rank_;
  const int64_t size_;
  const std::chrono::milliseconds timeout_;
  std::unique_ptr<Impl> impl_;
  std::atomic<int64_t> bytes_sent_{0};
  std::atomic<bool> aborted_{false};
  std::mutex mu_;  // guards why_ and the one ncclCommAbort
  std::string why_;
};

}  // namespace ofl
