// Runs the BOXING tasks of a Plan (graph/boxing.h plans them): one step of a
// layout conversion on one rank, through the Communicator of its group.
//
// RunBoxingStep reads `input` (this rank's slice before the step; an empty
// Tensor when the rank only receives) and writes `*output` (its slice after;
// null when the rank only sends). Collectives pack the parts along the split
// tensor axis into contiguous buffers and unpack them after (the rank's
// DeviceContext::CopyBox), so any axis works.
#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <tuple>
#include <vector>

#include "oneflow_lite/core/communicator.h"
#include "oneflow_lite/core/device_context.h"
#include "oneflow_lite/core/proto/plan.pb.h"
#include "oneflow_lite/core/tensor.h"
#include "runtime/gloo_communicator.h"
#include "runtime/inprocess_communicator.h"
#include "runtime/process_world.h"

// SEND_RECV cannot deadlock on the synchronous in-process Send: every rank does
// its sends and receives in increasing (sender, receiver) order of global ranks
// (receives from lower ranks, then its sends by receiver, then receives from
// higher ranks), so the smallest pending pair always has both of its ranks
// waiting on it. Local copies need no communicator.
//
// Devices: a step works on the memory of its rank's device, ordered on the
// boxing actor's stream (BoxingStream). On the host the packing, zero fill
// and sums run at once on the calling thread (a stream that does not run
// inline, a CPU worker stream, is synchronised first), exactly as without a
// stream. On a device they are enqueued on the stream (strided device copies,
// a sum kernel; scratch from the rank's allocator); before each call of a
// host-style communicator (an in-process group over device copies) the
// stream is synchronised, and a device-native one (NCCL) gets the stream and
// enqueues its call there. No step copies through host memory.
//
// BoxingGroups hands each rank of this process its Communicator per group_id
// of a Plan's BOXING tasks: a group whose members all live in this process
// gets an InProcessGroup (host memory for CPU devices; for others the backend's
// DeviceGroupMemory, core/device_backend.h: CUDA members on one GPU); a group
// that spans processes (Plan.process_of_rank) gets Gloo for CPU devices and for
// others the communicator its device type registered
// (runtime/device_communicators.h: NCCL for CUDA): one communicator per (member
// list, local member, stream), shared by every group_id with that member list
// whose tasks run on that stream of the rank (their calls carry distinct tags,
// and one stream's tasks run on one thread, in one cyclic order). Groups
// without a member here are skipped. Creating the Gloo communicators is
// collective: every process must create its BoxingGroups for the same plan in
// the same order; member lists connect in sorted order, the local members of
// one list at once. It is built before the rank threads start; afterwards For()
// and BytesSentByRank() may be called from any thread, and each returned
// Communicator serves one thread.

namespace ofl {

// Where a boxing step's bytes live and its work is ordered: the rank's device
// context (scratch buffers come from its allocator) and the boxing actor's
// stream. Both null: host memory, everything at once on the calling thread.
struct BoxingStream {
  DeviceContext* device = nullptr;
  Stream* stream = nullptr;
};

// `comm` is the rank's communicator for task.boxing_conf().group_id(); it
// may be null for the local kinds (group_id -1). On a device, the step's work
// is enqueued on `on.stream` (it may still run when this returns).
Status RunBoxingStep(const proto::TaskProto& task, const Tensor& input, Tensor* output,
                     Communicator* comm, const BoxingStream& on = {});

// Where a BoxingGroups reaches other processes.
struct BoxingWorld {
  ProcessWorld* world = nullptr;  // null: every rank lives in this process
  int64_t process = 0;            // this process (Plan.process_of_rank)
  std::string name;               // unique per session: Gloo group names derive from it
};

class BoxingGroups {
 public:
  // Errors when two tasks of one group_id name different members or device
  // types, or a task's rank is not a member of its group, or an in-process
  // CUDA group's members are on different GPUs, or the rendezvous (Gloo or
  // NCCL) fails.
  static Maybe<std::unique_ptr<BoxingGroups>> Create(const proto::Plan& plan,
                                                     std::chrono::milliseconds timeout,
                                                     const BoxingWorld& world = {});
  ~BoxingGroups();

  // The communicator of `global_rank` (a rank of this process) in group
  // `group_id`; null for -1.
  Communicator* For(int64_t group_id, int64_t global_rank) const;
  // Global rank (of this process) -> bytes it sent over every group, as the
  // communicators counted.
  std::map<int64_t, int64_t> BytesSentByRank() const;
  int64_t num_groups() const { return static_cast<int64_t>(groups_.size()); }
  int64_t num_gloo_communicators() const { return CountRemote(DeviceType::kCPU); }
  int64_t num_nccl_communicators() const { return CountRemote(DeviceType::kCUDA); }
  // Aborts every communicator (from a failed run's on_failure: wakes the
  // ranks blocked in a collective).
  void AbortAll(const std::string& why) const;
  // Between runs, when no rank is inside a collective: resets the in-process
  // groups; after a failed run, connects the Gloo and NCCL communicators anew
  // (neither can be reset after an abort): collective, as Create.
  Status ResetAll();

 private:
  BoxingGroups() = default;
  Status ConnectRemote();
  int64_t CountRemote(DeviceType type) const;

  struct Group {
    std::vector<int64_t> members;           // global ranks, in group order
    Device device;                          // its first task's device: the group's type
    std::unique_ptr<InProcessGroup> group;  // null when the group spans processes
  };
  // Groups that span processes: (member list, local member, stream) ->
  // communicator (Gloo or NCCL by the member's device); a rank's boxing
  // streams are threads of their own, and a communicator serves one thread.
  using RemoteKey = std::tuple<std::vector<int64_t>, int64_t, int64_t>;
  struct Remote {
    Device device;  // the local member's
    std::unique_ptr<Communicator> comm;
  };
  Status AddRemote(int64_t group_id, const RemoteKey& key, const Device& device);

  std::map<int64_t, Group> groups_;
  std::chrono::milliseconds timeout_{0};
  BoxingWorld world_;
  std::map<RemoteKey, Remote> remote_;
  std::map<std::pair<int64_t, int64_t>, RemoteKey> remote_of_;  // (group_id, rank) -> its key
  std::map<int64_t, int64_t> remote_bytes_before_;  // bytes of replaced communicators, per rank
  int64_t attempt_ = 0;
  mutable std::atomic<bool> remote_aborted_{false};
};

}  // namespace ofl
