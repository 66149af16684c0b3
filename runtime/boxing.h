// Runs the BOXING tasks of a Plan (graph/boxing.h plans them): one step of a
// layout conversion on one rank, through the Communicator of its group.
//
// RunBoxingStep reads `input` (this rank's slice before the step; an empty
// Tensor when the rank only receives) and writes `*output` (its slice after;
// null when the rank only sends). Collectives pack the parts along the split
// tensor axis into contiguous buffers and unpack them after (CopyBox of
// ops/array/strided_copy.h), so any axis works. SEND_RECV cannot deadlock on
// the synchronous in-process Send: every rank does its sends and receives in
// increasing (sender, receiver) order of global ranks (receives from lower
// ranks, then its sends by receiver, then receives from higher ranks), so
// the smallest pending pair always has both of its ranks waiting on it.
// Local copies need no communicator.
//
// BoxingGroups owns one InProcessGroup per group_id of a Plan's BOXING tasks
// and hands each rank its Communicator. It is built before the rank threads
// start; afterwards For() and BytesSentByRank() may be called from any
// thread, and each returned Communicator serves one thread.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <vector>

#include "oneflow_lite/core/communicator.h"
#include "oneflow_lite/core/proto/plan.pb.h"
#include "oneflow_lite/core/tensor.h"
#include "runtime/inprocess_communicator.h"

namespace ofl {

// `comm` is the rank's communicator for task.boxing_conf().group_id(); it
// may be null for the local kinds (group_id -1).
Status RunBoxingStep(const proto::TaskProto& task, const Tensor& input, Tensor* output,
                     Communicator* comm);

class BoxingGroups {
 public:
  // Errors when two tasks of one group_id name different members, or a task's
  // rank is not a member of its group.
  static Maybe<BoxingGroups> Create(const proto::Plan& plan, std::chrono::milliseconds timeout);

  // The communicator of `global_rank` in group `group_id`; null for -1.
  Communicator* For(int64_t group_id, int64_t global_rank) const;
  // Global rank -> bytes it sent over every group, as the communicators counted.
  std::map<int64_t, int64_t> BytesSentByRank() const;
  int64_t num_groups() const { return static_cast<int64_t>(groups_.size()); }
  // Every group's InProcessGroup::AbortAll (from a failed run's on_failure)
  // and Reset (between runs, when no rank is inside a collective).
  void AbortAll(const std::string& why) const;
  void ResetAll() const;

 private:
  struct Group {
    std::vector<int64_t> members;  // global ranks, in group order
    std::unique_ptr<InProcessGroup> group;
  };
  std::map<int64_t, Group> groups_;
};

}  // namespace ofl
