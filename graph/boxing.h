// Boxing planner: the steps that turn a tensor laid out as (placement, NdSbp)
// into another layout, and the bytes each global rank sends for them
// (DESIGN.md section 5). This is the one answer the cost model charges; the
// runtime (runtime/boxing.h) executes the steps and its communicator counts
// the same bytes on its own.
//
// Pure functions over value types; thread-safe.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "oneflow_lite/core/placement.h"
#include "oneflow_lite/core/proto/plan.pb.h"
#include "oneflow_lite/core/sbp.h"
#include "ops/op_registry.h"

// Same placement: one step per changed hierarchy axis, using the 1-D table
// (P->B all-reduce, P->S reduce-scatter, S->B all-gather, S->S all-to-all,
// B->S local slice, B->P zero fill, S->P local scatter) on the groups of that
// axis, in the cheapest order whose every step is sound. A step on axis a is
// sound when no inner axis (b > a) splits a tensor axis that the step splits
// or gathers: slicing.h applies outer axes first, so an inner split of the
// same tensor axis makes the members of an axis-a group hold interleaved
// pieces, e.g. (S(0), S(0)) -> (B, S(0)) is not an all-gather. When no order
// is sound, the general fallback runs: reduce the P axes that must go
// (outer to inner), then one SEND_RECV in which every rank receives, for its
// target slice, the overlap boxes from the ranks that hold them (itself if
// it does, else the least-loaded holder so far, then the lowest rank).
// Moving only what is missing: when neither layout has a P axis and two or
// more axes change, collectives can move up to several times what the ranks
// lack (on [3, 2], (B, S(0)) -> (S(0), B) all-gathers the whole tensor on
// every rank, then slices). There the direct plan, that one SEND_RECV from
// the source layout, in which every rank receives exactly the part of its
// target slice it does not hold, competes with the axis-by-axis one, and
// replaces it when its (busiest rank's, total) bytes sent are
// lexicographically smaller; a tie keeps the collectives. The rule is in
// bytes, not seconds, so that this planner, the cost model's pricing
// (boxing_cost.h, which makes the same choice per class of ranks) and the
// lowering, none of which needs a Cluster, pick the same plan, whatever the
// dtype a model is costed in: the runtime executes the plan that was priced.
// Different placements: reduce every source P axis on the source side, then
// SEND_RECV. A P target axis that the source lacks (or any P target across
// placements) is filled by the ranks at coordinate 0 of that axis; the
// other ranks hold zeros.

namespace ofl {

// One box of the logical tensor moved from `sender` to `receiver` (global
// ranks) in a SEND_RECV step; sender == receiver is a local copy.
struct BoxTransfer {
  int64_t sender = 0;
  int64_t receiver = 0;
  std::vector<int64_t> offset;  // logical coordinates of the box
  Shape shape;
};

struct BoxingStep {
  proto::BoxingConf::Kind kind = proto::BoxingConf::IDENTITY;
  int64_t hierarchy_axis = -1;  // the axis whose groups run it; -1 for SEND_RECV
  Placement from_placement;
  NdSbp from;
  Placement to_placement;  // equals from_placement except for a cross SEND_RECV
  NdSbp to;
  // global rank -> bytes it sends (saturating at INT64_MAX: a cost, for
  // tensors too large to move, rather than a wrapped count)
  std::map<int64_t, int64_t> bytes_sent;
  std::vector<BoxTransfer> transfers;  // SEND_RECV only, local copies included
  std::string ToString() const;
};

struct BoxingPlan {
  TensorDesc logical;
  Placement from_placement;
  NdSbp from;
  Placement to_placement;
  NdSbp to;
  std::vector<BoxingStep> steps;  // empty when nothing changes
  // Every rank of both placements -> bytes it sends over all steps.
  std::map<int64_t, int64_t> bytes_sent;

  int64_t MaxBytesSent() const;  // the busiest rank: what the cost model charges
  int64_t TotalBytesSent() const;
  std::string ToString() const;
};

// Plans the conversion of `logical` from (from_placement, from) to
// (to_placement, to). Errors name `name` and the offending values: an NdSbp
// whose length differs from its hierarchy, a split axis the shape lacks,
// different device types.
Maybe<BoxingPlan> PlanBoxing(const TensorDesc& logical, const Placement& from_placement,
                             const NdSbp& from, const Placement& to_placement, const NdSbp& to,
                             const std::string& name = "tensor");

// PlanBoxing without the SEND_RECV boxes: the same steps and bytes, with
// every step's `transfers` left empty. What the cost model charges; it skips
// the per-box allocations (millions on a 1,024-rank mesh).
Maybe<BoxingPlan> PlanBoxingBytes(const TensorDesc& logical, const Placement& from_placement,
                                  const NdSbp& from, const Placement& to_placement, const NdSbp& to,
                                  const std::string& name = "tensor");

const char* BoxingKindName(proto::BoxingConf::Kind kind);  // "ALL_GATHER"

}  // namespace ofl
