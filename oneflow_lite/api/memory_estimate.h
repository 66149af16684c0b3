// Predicted peak memory per rank of a DistributedSession (a memory model with
// liveness).
//
// Pure functions over value types; thread-safe on const inputs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "graph/op_graph.h"
#include "graph/strategy.h"
#include "oneflow_lite/api/distributed_session.h"
#include "oneflow_lite/api/session.h"

// The model mirrors what runs: it lowers the strategy into the very Plan
// DistributedSession::Create would run (graph/distributed_lowering.h, with the
// session's num_slots, micro-batches and gradient buckets) and asks the runtime
// what Build allocates for it (runtime/memory_estimate.h): the arena
// memory_plan.h gives the registers the dataflow orders (activations kept for
// backward until their last reader, temporaries freed at last use, one-slot
// boxing and bucket registers), plus every buffer it keeps apart (variables:
// parameters and optimizer state; multi-slot registers; boxing outputs;
// gradient buckets' reduced buffers; sources), plus what the transactional
// step's undo copy of the variables an update writes in place adds: on host
// ranks it lies over arena bytes dead at the update (one register slot) or
// over the registers' spare slots (two), and only the rest is new bytes;
// elsewhere it is whole buffers. It lives in api/
// because it needs both graph/ (lowering) and runtime/ (memory planning), and
// DESIGN.md section 2 lets only api/ use both.
//
// What it predicts is the session's per-rank allocator accounting,
// DistributedSession::PeakBytes() (core/allocator.h: bytes as requested,
// counted from allocation to free), not the process's RSS: kernel scratch,
// communicator staging and the Python side are not in it, and not here.
//
// The searchers' memory (CostOptions' additive per-node proxy, the constraint
// they search under, Solution::memory_bytes) is a different, cheaper figure and
// is left unchanged by this model, so search results do not move; this one is
// for reports and the fidelity bench. It costs one lowering and one memory plan
// per rank: fine for the meshes a session runs, not something to call inside a
// search.

namespace ofl {

// One rank's predicted peak, by what holds it. total_bytes is the sum of
// the other fields but planned_bytes (information: what the arena's
// registers would take unshared).
struct RankMemory {
  int64_t rank = 0;
  int64_t total_bytes = 0;
  int64_t arena_bytes = 0;            // registers shared by liveness (host ranks)
  int64_t planned_bytes = 0;          // the arena's registers unshared
  int64_t parameter_bytes = 0;        // trainable variables' slices
  int64_t optimizer_state_bytes = 0;  // "<parameter>/<state>" variables (optimizer_pass.h)
  int64_t buffer_bytes = 0;           // other variables (e.g. a causal mask)
  int64_t undo_bytes = 0;             // what the transactional step's undo copy adds
  int64_t boxing_bytes = 0;           // boxing outputs outside the arena
  int64_t bucket_bytes = 0;           // gradient buckets' buffers outside the arena
  int64_t register_bytes = 0;         // every other register outside the arena
};

struct MemoryEstimate {
  std::vector<RankMemory> ranks;  // index = rank, every rank of the plan
  int64_t max_bytes = 0;          // the busiest rank's total
  int64_t busiest_rank = 0;
  std::vector<int64_t> PeakBytes() const;  // per rank: total_bytes
  // "predicted peak memory (runtime model, liveness): 1.2 GiB on rank 0 = ..."
  std::string ToText() const;
};

// The peak bytes per rank of DistributedSession::Create(graph, strategy,
// fetches, options) (plan_memory and transactional as the options say).
// Errors: what the lowering or the runtime's plan check would refuse.
Maybe<MemoryEstimate> PredictSessionMemory(const OpGraph& graph, const Strategy& strategy,
                                           const std::vector<std::string>& fetches,
                                           const DistributedOptions& options);

// The same for a one-device Session::Create(graph, options): its strategy and
// options (OneDeviceStrategy, OneDeviceOptions) through the one lowering.
Maybe<MemoryEstimate> PredictSingleDeviceMemory(const OpGraph& graph,
                                                const SessionOptions& options);

}  // namespace ofl
