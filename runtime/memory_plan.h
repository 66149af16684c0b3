// Memory planning of registers: which registers of one rank may share bytes
// of one arena, and at which offsets; with transactional steps, also where
// the undo copies of updated variables go (runtime/step_undo.h), over dead
// registers or over the spare slots of registers of two or more slots.
// Runtime::Create (runtime.cpp) then allocates one arena per host rank
// through the rank's Allocator and makes each planned register's slot, each
// spare slot and each undo copy placed here a view into it; every other
// slot is a buffer of its own. Nothing is allocated per step either way.
//
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <vector>

#include "oneflow_lite/core/proto/plan.pb.h"

// Soundness rule. Actors run in no fixed order: an act may start as soon as
// its inputs are ready and its outputs free, also in the next iteration
// while the last one is still running. So two registers A and B share bytes
// only when the dataflow itself orders them, in this sense:
//   every reader of A (its producer, when it has none) at iteration i acts
//   before the producer of B at iteration i, and every reader of B at
//   iteration i acts before the producer of A at iteration i + 1
// (or the same with A and B swapped). "Acts before" is a path in the
// happens-before graph of two consecutive iterations, built from what the
// handshake enforces: producer(i) -> consumer(i) for every data and ctrl
// register; consumer(i) -> producer(i + 1) for a register of one slot (its
// slot must be freed before it is written again); task(i) -> task(i + 1).
// A task that reads A while it writes B keeps them apart (no path from a
// task to itself).
//
// Planned registers: non-persistent, non-control, one slot, period 1, some
// bytes, on `rank`, written by a COMPUTE or SOURCE task and read only by
// COMPUTE or SINK tasks, all of `rank` and all of period 1. Everything else
// (variables, multi-slot registers of pipelines, micro-batch registers,
// boxing buffers that communicators reach from other ranks) is left out. A
// plan whose task graph has a cycle, or with any period above 1, gets no
// arena at all. The caller plans only ranks whose device is host memory
// (an act there has finished when it returns; a device stream's kernels may
// still run).
//
// Views: the output y of a reshape or flatten task takes the very bytes of
// its input x (the kernel then copies nothing) when both are planned, no
// reader of either may write its inputs (no mutable input), and every
// reader of y in iteration i acts before x's producer in iteration i + 1;
// x and y then count as one register whose readers are both's.
//
// Undo copies (undo_copies = true): the undo copy of a persistent register
// of `rank` that exactly one COMPUTE task of `rank` writes in place (an
// OpDef mutable input; any input of an op the registry does not know), and
// that no other task writes, is saved by that task's act just before its
// kernel runs and lives until the end of the run. In a run of one
// iteration it may share bytes with a planned register when every reader of
// that register (its producer, when it has none) acts before the writer;
// undo copies never share with each other. Runs of more than one iteration
// do not use these bytes (StepUndo gives them whole buffers then). The undo
// copies join the arena only when the arena grows by fewer bytes than their
// own buffers would take; otherwise every undo_offset is -1.
//
// Spare slots (undo_copies = true, on a rank with no planned register, as in
// plans of two slots): a run of one iteration writes only slot 0 of each
// register (every run starts each register's slot queue at slot 0, and a
// period-1 task acts once per iteration), so slots 1 .. num_slots - 1 of a
// register that is otherwise like a planned one (non-persistent, data, on
// `rank`, written and read only by `rank`'s COMPUTE, SOURCE and SINK tasks)
// hold nothing the run needs. They join the arena (spare_offset, end to
// end at a kAlignment stride) and the undo copies may lie over them; spare
// slots share with nothing else. A run of more than one iteration writes
// them, and then StepUndo gives the copies whole buffers as above. They
// join with the undo copies or not at all, by the same rule: when the
// arena takes fewer bytes than the undo copies' and the spare slots' own
// buffers would.
//
// Placement: registers and undo copies by decreasing size (ties by id),
// each at the lowest 64-byte aligned offset that overlaps nothing placed
// it may not share with. When the arena would not be smaller than the planned registers' own
// buffers (nothing shares, and the alignment only adds bytes), the plan is
// empty.

namespace ofl {

struct MemoryPlan {
  static constexpr int64_t kAlignment = 64;
  static constexpr int64_t Aligned(int64_t bytes) {
    return (bytes + kAlignment - 1) / kAlignment * kAlignment;
  }
  int64_t arena_bytes = 0;
  // By register id: the byte offset of its one slot in the arena, or -1
  // when the register is not planned (it gets its own buffer).
  std::vector<int64_t> offset;
  // The bytes of the planned registers laid end to end (what they would
  // take without sharing, each rounded up to kAlignment).
  int64_t unshared_bytes = 0;
  // By register id: the byte offset of the undo copy of that persistent
  // register in the arena, or -1 (no undo copy here: StepUndo allocates one).
  std::vector<int64_t> undo_offset;
  // By register id: the byte offset of slot 1 of a register whose spare
  // slots are in the arena (slot s at spare_offset + (s - 1) x its slot's
  // bytes Aligned), or -1 (its slots are buffers of their own).
  std::vector<int64_t> spare_offset;
  // The spare slots' bytes in the arena, as their own buffers would count.
  int64_t spare_slot_bytes = 0;
  // What the undo copies add to the rank's bytes (0 when none is placed):
  // arena_bytes minus the arena without undo copies and spare slots, minus
  // spare_slot_bytes (those no longer take buffers of their own).
  int64_t undo_arena_bytes = 0;
};

// `producer[r]`: the task that writes register r (CheckPlan's answer).
// `undo_copies`: also place the undo copies (transactional steps).
MemoryPlan PlanRegisterMemory(const proto::Plan& plan, int64_t rank,
                              const std::vector<int64_t>& producer, bool undo_copies = false);

}  // namespace ofl
