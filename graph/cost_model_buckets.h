// The full step-time model of one chosen plan: gradient collectives fused
// into real buckets in order of readiness and overlapped with the rest of
// backward. The searchers optimise the additive
// proxy of cost_model.h; reports and the fidelity bench price the chosen
// plan with this. Pure functions of a built CostModel; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "graph/cost_model.h"

// Rules (seconds, one step; node_s and edge_s are the chosen entries,
// Solution::node_seconds and Solution::edge_seconds):
//  - A gradient edge is an edge from a backward op into a folded update.
//    Every other edge and every node counts as in the CostGraph (serial).
//  - Backward timeline of the last micro-batch (the one after which
//    gradients are complete): backward op nodes in graph order, each taking
//    node_s / multiplier plus its incoming non-gradient edges' edge_s /
//    multiplier; a gradient is ready when its producer ends; backward ends
//    at B, the sum of them all.
//  - Buckets, as the runtime fuses them (gradient_buckets.h): gradients in
//    order of readiness (ties in producer order); a gradient the runtime
//    fuses (FusedIntoBuckets: same placement, P and B axes -> all B, or ->
//    all S(0) with rows divisible by the ranks) joins, with each ALL_REDUCE
//    or REDUCE_SCATTER step of its boxing (PlanBoxingCost) on a mesh axis,
//    the open bucket of (placement, NdSbps, dtype, kind, axis); a bucket
//    closes once its buffer (each member's whole gradient, as the runtime
//    fills its buckets) reaches options.gradient_bucket_bytes, and the open
//    ones close at the end. Other steps, every step of a gradient the
//    runtime boxes alone (an uneven reduce-scatter, a gradient split on some
//    axis), and every step
//    when the bucket size is 0, are a bucket of their own. A bucket is ready when its last member
//    is, and takes CollectiveSeconds(kind, its members' busiest-rank bytes summed, group, level):
//    one latency per bucket. Steps of one gradient after the first are treated as ready with it
//    (approximation).
//  - One communication stream: in order of readiness, a bucket starts at
//    max(its ready time, the previous end); with options.overlap_gradients
//    off, no earlier than B. Exposed = max(0, last end - B).
//  - total = compute (every node) + transfer (every non-gradient edge) +
//    exposed.
// Pure functions of a built CostModel; thread-safe.

namespace ofl {

struct GradientBucket {
  std::string collective;       // CollectiveKindName: "all_reduce", ...
  int64_t hierarchy_axis = -1;  // -1: a SEND_RECV step
  int64_t group_size = 1;       // 0: the SEND_RECV's union of placements
  std::string level;            // the cluster level of an axis step's groups
  int64_t buffer_bytes = 0;     // the busiest rank's gradient bytes in the bucket
  int64_t sent_bytes = 0;       // members' busiest-rank bytes sent, summed
  std::vector<std::string> gradients;
  double ready_s = 0;  // from the start of the last micro-batch's backward
  double start_s = 0;
  double seconds = 0;
};

struct StepEstimate {
  double compute_s = 0;                 // every node's chosen compute
  double transfer_s = 0;                // every edge but the gradients'
  double backward_s = 0;                // B: the last micro-batch's backward
  double gradient_s = 0;                // the buckets' seconds, summed
  double exposed_gradient_s = 0;        // gradient communication past B
  double total_s = 0;                   // compute_s + transfer_s + exposed_gradient_s
  double proxy_total_s = 0;             // the CostGraph's total for the same choice
  std::vector<GradientBucket> buckets;  // in launch order
};

// Whether cost edge `edge` carries a gradient into its update.
bool IsGradientEdge(const CostModel& model, int edge);

// The full model of `choice` (one candidate per cost node). Errors: a bad choice.
Maybe<StepEstimate> EstimateStep(const CostModel& model, const std::vector<int>& choice);

}  // namespace ofl
