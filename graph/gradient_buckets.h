// Which gradients the distributed lowering fuses into one collective
// (LoweringOptions::gradient_bucket_bytes): the data-parallel all-reduces
// (P -> B) and the zero preset's reduce-scatters (P -> S(0)), as a pure
// function of graph and strategy, so that the lowering, the planner's byte
// count (api/planning.h PredictedBytesSent) and the step-time model
// (cost_model_buckets.h) agree. Fusable gradients (FusedBucketKind, read by
// an update on the placement that made them), in their producers' order,
// fill buckets per (placement, NdSbps, dtype) until a bucket's whole
// gradients reach `bucket_bytes`; one-member buckets are not returned (the
// gradient is boxed alone). Pure; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "graph/op_graph.h"
#include "graph/strategy.h"

namespace ofl {

enum class BucketKind { kNone, kAllReduce, kReduceScatter };

// One bucket's buffer, per rank of `placement`, is the register `shape`:
//  - kAllReduce: [N], the members flattened and concatenated; boxed
//    `from` -> `to` (B on every axis), each rank slices its members out.
//  - kReduceScatter: [p, N / p] (p = the placement's size); row d holds rank
//    d's shard of every member (member j's [p, n_j / p] view, concatenated
//    along axis 1), so boxing it `from` -> `to` (S(0) on every axis) leaves
//    on rank d row d: each member's shard is columns [c_j, c_j + n_j / p).
//    Every element is summed on the rank and in the order its member's own
//    reduce-scatter would sum it (the shards' places match), so the result
//    is bitwise that of the members boxed alone.
struct FusedGradients {
  BucketKind kind = BucketKind::kAllReduce;
  Placement placement;
  NdSbp from;  // the gradients' NdSbp (P and B axes)
  NdSbp to;    // B on every axis, or S(0) on every axis
  DataType dtype = DataType::kFloat32;
  std::vector<std::string> tensors;  // in the order their producers run
  std::vector<int64_t> elements;     // of each tensor
  int64_t total_elements = 0;
  Shape shape;  // the bucket register's logical shape (above)
};

// Which bucket the runtime fuses a gradient of `desc` boxed from `from` to
// `to` into, on one placement of `hierarchy` (kNone: boxed alone). Both need
// a floating dtype and P and B axes with at least one P. kAllReduce: B
// wanted on every axis. kReduceScatter: S(0) wanted on every axis and dim 0
// divisible by the placement's size, so every rank's shard is the same
// number of rows, one contiguous run in rank order. The cost model buckets
// exactly these (cost_model_buckets.h and the additive proxy), so that it
// charges what runs; uneven reduce-scatters and gradients split on some axis
// are boxed alone.
BucketKind FusedBucketKind(const TensorDesc& desc, const Shape& hierarchy, const NdSbp& from,
                           const NdSbp& to);
inline bool FusedIntoBuckets(const TensorDesc& desc, const Shape& hierarchy, const NdSbp& from,
                             const NdSbp& to) {
  return FusedBucketKind(desc, hierarchy, from, to) != BucketKind::kNone;
}

// Empty when bucket_bytes <= 0.
std::vector<FusedGradients> PlanGradientBuckets(const OpGraph& graph, const Strategy& strategy,
                                                int64_t bucket_bytes);

}  // namespace ofl
