// Gloo communicator: the collectives of one rank of a group whose ranks live
// in different processes or hosts (DESIGN.md sections 7 and 7b), behind the
// same Communicator interface as the in-process one. The bytes move on the
// socket mesh (runtime/socket_mesh.h, default) or on Gloo's TCP pairs
// (transport "gloo"); algorithms, bytes and failures are alike on both.
//
// Threads: one thread at a time calls the collectives (as the interface says);
// Abort, rank, size and bytes_sent may be called from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "oneflow_lite/core/communicator.h"
#include "runtime/deadline.h"
#include "runtime/socket_mesh.h"
#include "runtime/tcp_store.h"

// Rendezvous: every member process calls Create with the same group name and
// member list; the group's keys live under "ofl/gloo/<group>/" of a TcpStore
// (runtime/tcp_store.h), through gloo::rendezvous::PrefixStore. A group is a
// subset of the world's ranks (e.g. one per mesh axis); its rank r is the
// position of this process's world rank in the member list.
//
// Algorithms (built on Gloo's unbound buffers, so that every byte handed to
// the transport is counted by bytes_sent(), per send): the same direct
// algorithms as runtime/inprocess_communicator.cpp. Reduce-scatter: each rank
// sends every peer that peer's balanced part and sums its own part as
// own + rank 0's + rank 1's + ... (rank order, skipping itself; the same
// order as the in-process communicator, so both give the same bits);
// all-gather: each rank sends its part to every peer; all-reduce is one then
// the other, on one exchange whose all-gather receives are posted with the
// reduce-scatter's (a peer's part lands in place however early it comes).
// Bytes each rank sends therefore equal graph/boxing.cpp's per-rank formula
// exactly, uneven parts included (all-reduce (n - own) + (p - 1) own
// elements, reduce-scatter n - own, all-gather (p - 1) own). Gloo's own
// algorithms are not used (they hide their sends).
//
// Ranks that disagree on a call (its kind, tag, dtype, counts, or the size of
// one message) never match: each call and message size goes into Gloo's slot,
// so a mismatch is a timeout naming the rank waited on, never wrong data.
// Calls are numbered per signature, so one communicator may serve several
// collective instances (different tags) whose calls interleave differently
// on different ranks; the calls of one tag keep one order on every rank.
//
// Failure: every call has a deadline (options.timeout) and fails with an
// error naming this rank, the collective, its tag and the rank waited on. A
// lost peer (its process died: the connection closed) fails the call with
// "lost rank q". On any failure the rank closes its connections, so that
// peers blocked on it wake at once; the first rank of the group to fail
// publishes its reason under the group's "abort" key in the store, and every
// other rank's error ends with "(first failure in the group: <that reason>)",
// so a rank that only saw its neighbour go still names the lost rank.
// Abort(reason) (any thread) wakes a blocked call the same way.
// After a failure or Abort every call fails at once; build a new
// communicator (a new group name) to go on.
//
// Gloo runs one event-loop thread per communicator (the mesh none). Creating one sets SIGPIPE
// to ignored if it was at its default (a write to a dead peer must be an
// error, not the death of the process). The store must outlive the
// communicator.

namespace gloo {
class Context;
namespace transport {
class UnboundBuffer;
}
}  // namespace gloo

namespace ofl {

// "sockets" unless OFL_CPU_TRANSPORT names another ("gloo").
std::string DefaultCpuTransport();

struct GlooOptions {
  // Where this process's pairs listen: an address of this host reachable by
  // the peers ("127.0.0.1" for one host), or a network interface (iface
  // wins when set). Both empty: the address of this host's name.
  std::string hostname;
  std::string iface;
  // Deadline of each call, and of the rendezvous (connecting the pairs).
  std::chrono::milliseconds timeout{30000};
  std::chrono::milliseconds rendezvous_timeout{60000};
  // What moves the bytes: "sockets" (runtime/socket_mesh.h, driven by the
  // calling thread; a send completes once written: eager) or "gloo" (Gloo's
  // TCP pairs and their loop thread; a send completes once the peer posted
  // its receive). Default: OFL_CPU_TRANSPORT, else "sockets".
  std::string transport = DefaultCpuTransport();
};

class GlooCommunicator : public Communicator {
 public:
  // Reduce-scatter receives and sums in chunks of this many bytes, so that
  // adding one chunk overlaps receiving the next.
  static constexpr int64_t kReduceChunkBytes = int64_t{1} << 20;
  // Bytes of a chunk summed between two pumps of the socket mesh.
  static constexpr int64_t kSumSliceBytes = int64_t{256} << 10;

  // Connects the processes whose world ranks are `members` (distinct, in
  // group-rank order); this process is world rank `world_rank`, one of them.
  static Maybe<std::unique_ptr<GlooCommunicator>> Create(TcpStore* store, const std::string& group,
                                                         const std::vector<int64_t>& members,
                                                         int64_t world_rank,
                                                         const GlooOptions& options);
  ~GlooCommunicator() override;

  int64_t rank() const override { return rank_; }
  int64_t size() const override { return static_cast<int64_t>(members_.size()); }
  int64_t bytes_sent() const override { return bytes_sent_.load(); }
  const std::string& group() const { return group_; }

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

  // Wakes a blocked call (it fails naming `reason`); later calls fail at once.
  void Abort(const std::string& reason) override;

 private:
  class Exchange;
  friend class Exchange;

  GlooCommunicator(TcpStore* store, std::string group, std::vector<int64_t> members, int64_t rank,
                   std::chrono::milliseconds timeout);
  // Starts a call: fails at once after an abort; checks the dtype.
  // Bool tensors may be moved (all_gather, all_to_all, ...) but not summed.
  Status Begin(const std::string& what, DataType dtype, bool sums = false);
  void End();
  // Closes this rank's connections (peers blocked on it wake at once).
  void CloseConnections();
  // Registers a posted buffer for Abort; false when aborted meanwhile.
  bool Track(gloo::transport::UnboundBuffer* buffer);
  // After a failed wait: the reason (the group's published one, else ours),
  // published to the store, connections closed; the error for `what`.
  Status Fail(const std::string& what, const std::string& reason, bool timed_out);
  std::string Lost(int64_t peer, const std::string& detail) const;
  // Publishes `mine` as the group's first failure if no rank did before;
  // returns the first failure when another rank's, else "".
  std::string Publish(const std::string& mine);
  uint64_t CollectiveSlot(const std::string& signature);
  // Posts on `ex` the receives of every peer's copy of this rank's part,
  // then calls `after_recvs` (may be empty: the caller's own receives, e.g.
  // the all-gather's), then sends every peer its balanced part of `input`,
  // and sums this rank's part into dst as init (null: dst itself) + rank
  // 0's + rank 1's + ... (skipping this rank), chunk by chunk as the chunks
  // arrive. Returns once summed; the caller waits for the sends (ex.Wait).
  Status ReduceScatterPhase(Exchange& ex, const void* input, void* dst, const void* init,
                            int64_t count, DataType dtype,
                            const std::function<void()>& after_recvs);
  uint64_t PointSlot(bool send, int64_t peer, const std::string& tag, int64_t bytes);
  // Send (send true) or Recv of `count` elements with `peer`.
  Status PointToPoint(bool send, void* buffer, int64_t count, DataType dtype, int64_t peer,
                      const std::string& tag);

  TcpStore* const store_;
  const std::string group_;
  const std::vector<int64_t> members_;
  const int64_t rank_;
  const std::chrono::milliseconds timeout_;
  std::shared_ptr<gloo::Context> context_;
  std::unique_ptr<SocketMesh> mesh_;  // the "sockets" transport; else context_
  std::atomic<int64_t> bytes_sent_{0};
  std::vector<char> staging_;  // peers' addends of this rank's part, reused across calls
  std::map<std::string, uint64_t> sequences_;  // calls so far, per signature
  std::map<std::pair<int64_t, std::string>, uint64_t> sends_, recvs_;  // per (peer, tag)

  std::mutex mu_;             // guards the three below
  std::string abort_reason_;  // non-empty once failed or aborted
  bool in_call_ = false;
  bool closed_ = false;
  std::vector<gloo::transport::UnboundBuffer*> in_flight_;
};

}  // namespace ofl
