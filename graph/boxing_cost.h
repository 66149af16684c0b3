// What the cost model charges for a boxing: the steps PlanBoxing
// (graph/boxing.h) would take, each with the bytes of its busiest rank and of
// all ranks together, without visiting every rank. Axis steps are counted on
// one representative rank per class: on each hierarchy axis, the coordinates
// fall into runs within which every slice size and every all-reduce part the
// plan can meet is the same (balanced splits give the first `n % p` parts one
// more element), so a run's ranks send alike; the classes are the products of
// runs, weighted by their sizes.
//
// Pure functions over value types; thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "graph/boxing.h"

// On [128, 8] a plan visits a handful of classes instead of 1,024 ranks. A
// SEND_RECV step (its sender choice depends on the order of the receivers) is
// counted per cell of the two grids where that is exact (boxing_cells.cpp),
// else per rank, as PlanBoxing does. Where the direct SEND_RECV competes with
// the axis steps (boxing.h: P-free layouts, two or more axes changed), both are
// priced so and the same rule picks one.
//
// The numbers equal PlanBoxingBytes's exactly (same steps, same order
// chosen, same busiest and total bytes; the test boxing_cost_test holds it
// on random cases against CostOf(PlanBoxingBytes(...))).

namespace ofl {

struct BoxingStepCost {
  proto::BoxingConf::Kind kind = proto::BoxingConf::IDENTITY;
  int64_t hierarchy_axis = -1;  // -1 for SEND_RECV
  NdSbp from;
  NdSbp to;
  int64_t max_bytes = 0;    // the busiest rank's bytes in this step (saturating)
  int64_t total_bytes = 0;  // every rank's together (saturating)

  bool operator==(const BoxingStepCost& o) const {
    return kind == o.kind && hierarchy_axis == o.hierarchy_axis && from == o.from && to == o.to &&
           max_bytes == o.max_bytes && total_bytes == o.total_bytes;
  }
  std::string ToString() const;
};

// A boxing's steps in order (empty when nothing changes). Axis steps run on
// the source placement's groups; a SEND_RECV step goes from the source
// placement to the target one.
struct BoxingCost {
  std::vector<BoxingStepCost> steps;
};

namespace boxing_internal {
struct SendRecvMemo;
}

// What PlanBoxingCost may keep between the calls of one cost-model build:
// the slice grids of the SEND_RECV pricing per (shape, hierarchy, NdSbp) and
// each SEND_RECV step within one placement per (shape, element size,
// hierarchy, source, target), which is all it depends on. Not synchronised.
class BoxingCostCache {
 public:
  BoxingCostCache();
  ~BoxingCostCache();
  BoxingCostCache(BoxingCostCache&&) noexcept;
  BoxingCostCache& operator=(BoxingCostCache&&) noexcept;
  boxing_internal::SendRecvMemo& memo() { return *memo_; }

 private:
  std::unique_ptr<boxing_internal::SendRecvMemo> memo_;
};

// PlanBoxingBytes's steps and byte counts, per class of ranks (above). Same
// checks and errors as PlanBoxing. `cache` (may be null) makes repeated
// SEND_RECV pricings cheap; the answer is the same with or without it.
Maybe<BoxingCost> PlanBoxingCost(const TensorDesc& logical, const Placement& from_placement,
                                 const NdSbp& from, const Placement& to_placement, const NdSbp& to,
                                 const std::string& name = "tensor",
                                 BoxingCostCache* cache = nullptr);

// The same summary of a plan that visited every rank.
BoxingCost CostOf(const BoxingPlan& plan);

}  // namespace ofl
