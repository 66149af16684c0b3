// In-process communicator: collectives among N virtual devices of one
// process (DESIGN.md section 7), the embedded default: over shared host
// memory, or device copies for virtual devices on one GPU. An
// InProcessGroup is shared by its N ranks; each rank's thread calls the
// collectives through its own Communicator from Group::Rank(r). Algorithms are
// direct (not via rank 0): reduce-scatter by summing each rank's own part from
// every peer, all-gather by each rank copying the others' parts; an all-reduce
// is one then the other.
//
// The group object is thread-safe; each Communicator serves one thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "oneflow_lite/core/communicator.h"
#include "oneflow_lite/core/device_backend.h"

// Ranks meet at barriers with a timeout; a timeout or a mismatch aborts the
// whole group, and every rank returns an error that names its rank, the
// collective and the tag. Memory: the ranks' buffers are host memory by default
// (HostGroupMemory: memcpy and core/reduce_sum.h); a group made with another
// GroupMemory (core/device_backend.h's DeviceGroupMemory) moves and sums
// device memory instead (CUDA: N virtual devices on one GPU, device copies and
// a reduction kernel). Either way a call's copies and sums are complete when
// it returns.

namespace ofl {

class InProcessGroup {
 public:
  InProcessGroup(int64_t size, std::chrono::milliseconds timeout,
                 GroupMemory memory = HostGroupMemory());
  ~InProcessGroup();
  int64_t size() const { return size_; }
  // The communicator of rank `rank`; owned by the group, valid while it lives.
  Communicator* Rank(int64_t rank);
  // Bytes each rank has sent so far.
  std::vector<int64_t> BytesSent() const;
  // From outside the group (a failed run): wakes every rank blocked in a
  // collective with an error that gives `why`; later collectives fail at
  // once until Reset.
  void AbortAll(const std::string& why);
  // Clears an abort and any half-done collective. Only while no rank is
  // inside a collective (between runs).
  void Reset();

 private:
  friend class InProcessCommunicator;

  // What one rank posted for the collective in progress.
  struct Post {
    std::string kind;
    std::string tag;
    const void* input = nullptr;
    void* output = nullptr;
    int64_t count = 0;
    DataType dtype = DataType::kFloat32;
    const int64_t* counts = nullptr;  // all-gather: per rank; all-to-all: send counts
    int64_t root = 0;
  };

  // Waits until every rank reached this barrier (the group counts them by
  // generation), or the timeout; `what` names the caller's collective.
  Status Barrier(int64_t rank, const std::string& what);
  Status Abort(int64_t rank, const std::string& what, const std::string& why);
  void AddBytes(int64_t sender, int64_t bytes) { bytes_sent_[sender] += bytes; }

  const int64_t size_;
  const std::chrono::milliseconds timeout_;
  const GroupMemory memory_;
  std::vector<Post> posts_;
  std::vector<std::unique_ptr<Communicator>> ranks_;
  std::unique_ptr<std::atomic<int64_t>[]> bytes_sent_;

  std::mutex mu_;
  std::condition_variable cv_;
  int64_t arrived_ = 0;
  int64_t generation_ = 0;
  std::vector<bool> arrived_ranks_;
  std::string abort_reason_;  // non-empty once aborted

  // Point to point: (sender, receiver, tag) -> the sender's buffer.
  struct Mail {
    const void* buffer = nullptr;
    int64_t bytes = 0;
    bool taken = false;
  };
  std::map<std::tuple<int64_t, int64_t, std::string>, Mail> mailbox_;
};

}  // namespace ofl
