// Which gradients the distributed lowering fuses into one all-reduce
// (LoweringOptions::gradient_bucket_bytes), as a pure function of the graph
// and the strategy, so that the lowering and the planner's byte count
// (api/planning.h PredictedBytesSent) agree. A gradient is fusable when an
// update reads it (a non-in-place input produced by an op) on the placement
// that produced it, and FusedIntoBuckets holds: its boxing only sums. Fusable gradients, in the
// graph order of their producers, fill buckets per (placement, NdSbps, dtype) until a bucket's
// bytes (whole tensors: P and B slices are whole) reach `bucket_bytes`; the open buckets close at
// the end. Buckets of one gradient are not returned (it is boxed alone). Pure; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "graph/op_graph.h"
#include "graph/strategy.h"

namespace ofl {

struct FusedGradients {
  Placement placement;
  NdSbp from;  // the gradients' NdSbp (P and B axes)
  NdSbp to;    // B on every axis
  DataType dtype = DataType::kFloat32;
  std::vector<std::string> tensors;  // in the order their producers run
  std::vector<int64_t> elements;     // of each tensor
  int64_t total_elements = 0;
};

// Whether the runtime fuses a gradient boxed from `from` to `to` (same
// placement, `dtype`): floating, P and B axes with at least one P, wanted B
// on every axis. The cost model buckets exactly these (cost_model_buckets.h
// and the additive proxy), so that it charges what runs; reduce-scatters
// (P -> S, the zero preset) and gradients split on some axis are boxed alone.
bool FusedIntoBuckets(const NdSbp& from, const NdSbp& to, DataType dtype);

// Empty when bucket_bytes <= 0.
std::vector<FusedGradients> PlanGradientBuckets(const OpGraph& graph, const Strategy& strategy,
                                                int64_t bucket_bytes);

}  // namespace ofl
