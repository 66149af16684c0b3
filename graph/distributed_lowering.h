// The lowering: an OpGraph and a Strategy become the Plan the actor runtime
// executes on every rank of the strategy's placement (DESIGN.md sections 1, 5,
// 7); one device is the one-rank case (api/session.h). Per rank: a SOURCE task
// per fed input and a VARIABLE task per variable holding its slice, a COMPUTE
// task per op on stream 0 in graph order with physical shapes from slicing,
// BOXING tasks (graph/boxing_tasks.h, stream 1) where a consumer needs another
// NdSbp than its producer made (one per (tensor, target NdSbp)), SINK tasks for
// the fetched tensors, and ctrl edges that make every in-place update act after
// all other readers of the variable it writes.
#pragma once

#include <string>
#include <vector>

#include "graph/strategy.h"
#include "oneflow_lite/core/proto/plan.pb.h"

// Every register of a logical tensor records its logical shape, offset and
// NdSbp, so the caller can slice feeds and variables and assemble fetches.
//
// Pipeline stages: each op is lowered on its own placement (Strategy); an
// edge between placements is boxed across them (SEND_RECV steps) into
// registers of >= 2 slots, so stages work on different micro-batches at once.
// Micro-batches (micro_batches = k > 1): the graph is built for one
// micro-batch; variables and updates (ops with in-place inputs) act once per
// k iterations (TaskProto.period = k), everything else every iteration. A
// step-rate op's micro-rate input (a gradient) passes through an ACC task
// per rank (mean of k values, register period k) before any boxing, so the
// gradient is boxed once per step; boxing of step-rate tensors runs on its
// own stream (kStepBoxingStream) because one stream's boxing acts in one
// cycle. In-place ctrl edges get period k: a micro-rate reader signals the
// update after its k-th micro-batch of the step. Gradient buckets
// (options.gradient_bucket_bytes, gradient_buckets.h): data-parallel
// gradients' all-reduces, and the zero preset's reduce-scatters, fused, one
// collective per bucket. Pure function.

namespace ofl {

struct LoweringOptions {
  int64_t num_slots = 2;      // slots of non-persistent registers: 2 overlaps iterations
  int64_t micro_batches = 1;  // k: iterations (micro-batches) per optimizer step
  // > 0: gradients whose boxing only sums P axes into B (data-parallel
  // gradients) or into S(0) (the zero preset, evenly split) are fused, in the
  // order their producers run, into buckets of up to this many bytes per
  // rank (gradient_buckets.h FusedBucketKind): per rank a reshape and a
  // concat into one register, one all-reduce or reduce-scatter of it (boxing
  // as any tensor), then a slice and reshape back per gradient. Each
  // bucket's collective acts as soon as its last gradient is ready, on the
  // boxing stream, while backward goes on. 0: each gradient boxed alone.
  int64_t gradient_bucket_bytes = 0;
  // A matmul whose output only a bias_add reads, both on one same one-rank
  // placement, runs as one matmul_bias task (graph/matmul_bias_fusion.h).
  bool fuse_matmul_bias = false;
};

constexpr int64_t kStepBoxingStream = 2;  // boxing of once-per-step tensors

Maybe<proto::Plan> LowerDistributed(const OpGraph& graph, const Strategy& strategy,
                                    const std::vector<std::string>& fetches,
                                    const LoweringOptions& options = {});

}  // namespace ofl
