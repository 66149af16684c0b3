// StepUndo: makes Runtime::Run all-or-nothing for the state a step updates in
// place (transactional steps, RuntimeOptions::transactional). Mechanism: an
// undo copy.
//
// Ownership: StepUndo holds pointers to the Runtime's registers (which outlive
// it) and owns its buffers.
//
// Thread safety: Save and Restore from the Runtime's caller thread while no
// actor runs.
#pragma once

#include <tbb/task_arena.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "oneflow_lite/core/device_context.h"
#include "oneflow_lite/core/proto/plan.pb.h"
#include "oneflow_lite/core/status.h"
#include "runtime/actor.h"

// At Build, one buffer per *updated* persistent register (a variable that some
// COMPUTE task writes in place: an OpDef mutable input, e.g. sgd_update's param
// and momentum_buffer, adam_update's param, m, v and step) is allocated by the
// register's rank's Allocator, so the rank's peak bytes count it (bytes(rank) =
// the sum of those registers' bytes, the same as the state itself; read-only
// variables get none). Save() copies the registers into the buffers before the
// actors start; when the run's agreed outcome is an error, Restore() copies
// them back after every actor thread has stopped. Copies are chunked memcpy in
// one oneTBB arena (the run's kernel threads are idle then).
//
// Why an undo copy rather than shadow buffers swapped at a commit point:
// update kernels write their mutable inputs in place and actors hand the
// same slot to the next step's readers; shadowing would need a second
// register per variable wired through the plan and a swap of every reader's
// pointer. The undo copy touches no kernel, actor or plan, costs the same
// bytes, and one memcpy of the state per Run (measured in runtime/README.md).

namespace ofl {

class StepUndo {
 public:
  // Register ids of the persistent registers a run may write: inputs at an
  // OpDef mutable index of a COMPUTE task (all persistent inputs when the
  // op is unknown to the registry), and any written by a non-VARIABLE task.
  static std::vector<int64_t> UpdatedRegisters(const proto::Plan& plan);

  // With `keep_copy`, one undo buffer per updated register, from the
  // allocator of devices[its rank] (host memory: chunked memcpy; a device's:
  // one DeviceContext::CopySync each); without, none
  // (Save and Restore do nothing).
  // Registers with no slot (ranks this process does not run) are skipped.
  // `registers` (by id) must outlive the StepUndo. `threads`: the copy
  // threads (>= 1).
  StepUndo(const proto::Plan& plan, std::vector<RuntimeRegister>* registers,
           const std::vector<std::unique_ptr<DeviceContext>>& devices, int threads, bool keep_copy);

  void Save();     // registers -> undo buffers
  void Restore();  // undo buffers -> registers

  bool keeps_copy() const { return keep_copy_; }
  // Per rank: the undo buffers' bytes (0 without keep_copy).
  const std::vector<int64_t>& bytes_per_rank() const { return bytes_per_rank_; }
  int64_t num_updated_registers() const { return static_cast<int64_t>(entries_.size()); }

 private:
  struct Entry {
    Tensor* live = nullptr;  // the register's one slot
    Tensor undo;
    DeviceContext* device = nullptr;  // the register's rank's (with keep_copy)
  };
  // Copies every entry's bytes, `to_undo` or back, in chunks, in parallel.
  void Copy(bool to_undo);

  bool keep_copy_ = true;
  std::vector<Entry> entries_;  // per updated register; undo undefined without keep_copy
  std::vector<int64_t> bytes_per_rank_;
  std::unique_ptr<tbb::task_arena> arena_;
};

// A run's outcome once every actor thread stopped: commit(local) when
// `commit` is set (an OK for a failed `local` keeps `local`), else `local`.
// On an error of a plan that updates variables: restores `undo` and appends
// " (variables and optimizer state restored to their values before this
// run)", or, without an undo copy, " (state may be partially updated:
// transactional steps are off)". A plan that updates none keeps the error
// as it is.
Status ConcludeRun(const Status& local, const std::function<Status(const Status&)>& commit,
                   StepUndo* undo);

}  // namespace ofl
