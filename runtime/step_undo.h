// StepUndo: makes Runtime::Run all-or-nothing for the state a step updates in
// place (transactional steps, RuntimeOptions::transactional): an undo copy
// of each updated variable, in arena bytes dead or spare at its update where
// the memory plan found them (saved by the writing act), else in its own buffer.
//
// Ownership: holds pointers to the Runtime's registers (which outlive it),
// shares the ranks' arenas through its views, owns its other buffers.
// Thread safety: BeginRun and Restore on the caller's thread while no actor
// runs; SaveBefore(task) on task's actor thread (tasks save disjoint
// registers, so different tasks' calls may run at once).
#pragma once

#include <tbb/task_arena.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <vector>

#include "oneflow_lite/core/device_context.h"
#include "oneflow_lite/core/proto/plan.pb.h"
#include "oneflow_lite/core/status.h"
#include "runtime/actor.h"

// Which registers: every *updated* persistent register (a variable that some
// COMPUTE task writes in place: an OpDef mutable input, e.g. sgd_update's
// param and momentum_buffer, adam_update's param, m, v and step; read-only
// variables get no copy).
//
// Where the copy lives, decided once at Build:
//  - in the rank's arena (a view given to the constructor), for the
//    registers runtime/memory_plan.h places there: one COMPUTE writer of a
//    host rank with period-1 plans. In a run of one iteration the writer's
//    act saves the register just before its kernel runs (SaveBefore), into
//    bytes whose other registers are dead by then (one-slot plans: the
//    update comes after backward, when most activations are) or that the
//    run never writes (plans of two slots: slot 1 of each register, which
//    only a run of several iterations uses); the rank's peak grows by what
//    the arena grew beyond those spare slots (bytes_per_rank), often far
//    less than the state.
//  - in a buffer of its own from the register's rank's Allocator, for every
//    other updated register (device ranks, pipelines with periods above 1,
//    several writers, no arena): copied before the actors start, as before.
// A run of more than one iteration overlaps iterations, so an arena copy
// taken in iteration 0 would meet iteration 1's activations (or its spare
// slots, which it writes): BeginRun then
// gives each arena copy a whole buffer of its own (allocated once, at the
// first such run, and kept; it grows the peak by those registers' bytes)
// and copies everything before the actors start.
//
// When the run's agreed outcome is an error, Restore() copies back what this
// run saved (a register whose writer never acted was never written) after
// every actor thread has stopped. Copies before and after a run are chunked
// memcpy in one oneTBB arena (the run's kernel threads are idle then); a
// device's: one DeviceContext::CopySync each.
//
// Why an undo copy rather than shadow buffers swapped at a commit point:
// update kernels write their mutable inputs in place and actors hand the
// same slot to the next step's readers; shadowing would need a second
// register per variable wired through the plan and a swap of every reader's
// pointer, and the shadow would need the state's bytes again while the
// update runs. The undo copy touches no kernel or plan, and in the arena it
// costs only the bytes the update phase cannot reuse (measured in
// runtime/README.md).

namespace ofl {

class StepUndo {
 public:
  // Register ids of the persistent registers a run may write: inputs at an
  // OpDef mutable index of a COMPUTE task (all persistent inputs when the
  // op is unknown to the registry), and any written by a non-VARIABLE task.
  static std::vector<int64_t> UpdatedRegisters(const proto::Plan& plan);

  // With `keep_copy`, one undo copy per updated register: `in_arena[id]`
  // when defined (a view of the register's shape and dtype into its rank's
  // arena: MemoryPlan::undo_offset), else a buffer from the allocator of
  // devices[its rank]; `arena_bytes[rank]`: what the rank's arena grew by
  // for its copies (MemoryPlan::undo_arena_bytes). Without, none (BeginRun,
  // SaveBefore and Restore do nothing). Registers with no slot (ranks this
  // process does not run) are skipped. `registers` (by id) must outlive the
  // StepUndo. `threads`: the copy threads (>= 1).
  StepUndo(const proto::Plan& plan, std::vector<RuntimeRegister>* registers,
           const std::vector<std::unique_ptr<DeviceContext>>& devices, int threads, bool keep_copy,
           const std::vector<Tensor>& in_arena, const std::vector<int64_t>& arena_bytes);

  // Before the actors start a run of `num_iterations`: copies the registers
  // whose copy has a buffer of its own (more than one iteration: first
  // gives the arena copies such buffers too, once; an allocation failure is
  // the error and the run must not start).
  Status BeginRun(int64_t num_iterations);
  // From `task`'s actor thread, before its kernel: saves the arena copies of
  // the registers `task` writes, the first time it acts in this run (runs
  // of one iteration only).
  void SaveBefore(int64_t task);
  void Restore();  // what this run saved -> the registers

  // The tasks that call SaveBefore (the writers of the arena copies).
  std::vector<int64_t> SavingTasks() const;

  bool keeps_copy() const { return keep_copy_; }
  // Per rank: the bytes the undo copy adds to peak_bytes() (0 without
  // keep_copy): its own buffers plus what it grew the arena by.
  const std::vector<int64_t>& bytes_per_rank() const { return bytes_per_rank_; }
  int64_t num_updated_registers() const { return static_cast<int64_t>(entries_.size()); }

 private:
  struct Entry {
    Tensor* live = nullptr;           // the register's one slot
    Tensor undo;                      // where this run's copy goes (the arena view or `whole`)
    Tensor arena;                     // the arena view, when it has one
    Tensor whole;                     // a buffer of its own (always, without an arena view)
    DeviceContext* device = nullptr;  // the register's rank's (with keep_copy)
    int64_t rank = 0;
    int64_t writer = -1;  // the task that saves it into `arena`
    bool saved = false;   // in this run
  };
  // Copies the bytes of `entries`, to their undo copies or back, in chunks,
  // in parallel.
  void Copy(const std::vector<Entry*>& entries, bool to_undo);

  bool keep_copy_ = true;
  bool lazy_ = false;           // this run saves the arena copies in SaveBefore
  std::vector<Entry> entries_;  // per updated register; no copies without keep_copy
  std::map<int64_t, std::vector<size_t>> by_writer_;  // task -> its arena copies' entries
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
