// Memory estimate of a Plan: per rank, the bytes Runtime::Create would have
// its rank's Allocator hand out (the planned arena, the registers kept apart,
// the undo copy), worked out from the plan alone, without allocating. It is
// the runtime's own account of what it allocates, so it lives here; equal to
// peak_bytes() after any number of runs of one iteration each. Pure
// function of the plan; thread-safe.
#pragma once

#include <cstdint>
#include <vector>

#include "oneflow_lite/core/proto/plan.pb.h"
#include "oneflow_lite/core/status.h"

// Memory estimate of a Plan: per rank, the bytes Runtime::Create would have
// its rank's Allocator hand out, worked out from the plan alone, without
// allocating or starting anything. This is the runtime's own account of what
// it allocates, so it belongs here (graph/ may not call memory_plan.h; api/
// lowers a strategy and asks this). What Build allocates, once, per rank:
//  - the arena of planned registers (runtime/memory_plan.h), when the rank's
//    device is host memory and planning is on: activations kept for
//    backward, temporaries freed at last use and one-slot boxing and bucket
//    concat registers share it by liveness; with transactional steps, the
//    undo copies the plan places there share it too (the update runs when
//    most activations are dead);
//  - num_slots buffers of every register not in the arena (variables,
//    multi-slot registers, micro-batch registers, boxing outputs that other
//    ranks' communicators reach, sources, control registers), each of its
//    desc's bytes;
//  - with transactional steps, one undo buffer per updated persistent
//    register (runtime/step_undo.h: StepUndo::UpdatedRegisters) that the
//    arena does not hold.
// Nothing else goes through the Allocator: kernels' scratch, communicators'
// staging and fetched clones are plain host tensors (not counted by
// peak_bytes()). Since the runtime allocates nothing per step, a rank's
// peak_bytes() after any number of runs of one iteration equals total()
// here; the tests in tests/cpp/api/memory_estimate_test.cpp hold the two
// against each other. The one exception: the first transactional run of
// more than one iteration gives every undo copy of the arena a buffer of its
// own (runtime/step_undo.h), adding those registers' bytes for good.
// Pure function of the plan; thread-safe.

namespace ofl {

struct MemoryEstimateOptions {
  bool plan_memory = true;    // RuntimeOptions::plan_memory
  bool transactional = true;  // RuntimeOptions::transactional
};

// One register with buffers of its own: all its slots' bytes.
struct OwnBuffer {
  int64_t register_id = 0;
  int64_t bytes = 0;  // num_slots x one slot's bytes
};

struct RankMemoryEstimate {
  int64_t rank = 0;
  bool host = true;            // device memory: no arena
  int64_t arena_bytes = 0;     // the shared arena without the undo copies' part (0: none)
  int64_t planned_bytes = 0;   // the arena's registers laid end to end (unshared)
  std::vector<OwnBuffer> own;  // every register outside the arena, by id
  int64_t own_bytes = 0;       // their sum
  // Of own_bytes, the spare slots that live in the arena instead
  // (runtime/memory_plan.h "Spare slots"): a register's `own` entry still
  // counts all its slots.
  int64_t spare_slot_bytes = 0;
  // What the undo copy of updated variables adds: its buffers of their own
  // plus undo_in_arena_bytes, what it grows the arena by beyond the spare
  // slots (the arena allocated is arena_bytes + spare_slot_bytes +
  // undo_in_arena_bytes).
  int64_t undo_bytes = 0;
  int64_t undo_in_arena_bytes = 0;
  int64_t total() const { return arena_bytes + own_bytes + undo_bytes; }
};

// Per rank of the plan (index = rank). Errors: the plan fails CheckPlan (the
// runtime would refuse it too), or a register's dtype does not parse.
Maybe<std::vector<RankMemoryEstimate>> EstimatePlanMemory(const proto::Plan& plan,
                                                          const MemoryEstimateOptions& options);

}  // namespace ofl
