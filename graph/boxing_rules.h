// Internal to the boxing planner (graph/boxing.h): the rules that both of
// its byte counters share. PlanBoxing counts every rank's bytes; PlanBoxingCost
// (graph/boxing_cost.h) counts one representative rank per class of ranks
// that send alike. Both take their steps from here (which step kinds, which
// orders are sound, what a P axis reduces to, the bytes of one rank in an
// axis step), so they can differ only in how many ranks they visit.
// Pure functions over value types; thread-safe. Not for use outside graph/.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <tuple>
#include <utility>
#include <vector>

#include "graph/boxing.h"

namespace ofl::boxing_internal {

NdSbp With(const NdSbp& nd_sbp, int64_t axis, const Sbp& sbp);

// The 1-D conversion x -> y (x != y) as one step kind (DESIGN.md section 5).
proto::BoxingConf::Kind AxisKind(const Sbp& x, const Sbp& y);

// Whether changing hierarchy axis `axis` of `cur` to `y` is a 1-D conversion
// on the groups of that axis (boxing.h).
bool StepSound(const NdSbp& cur, int64_t axis, const Sbp& y);

// Bytes one rank sends in an axis step, from its slice shapes before and
// after and the group size p, as runtime/inprocess_communicator.cpp counts them.
int64_t AxisStepBytes(proto::BoxingConf::Kind kind, const Shape& before, const Shape& after,
                      int64_t p, int64_t position, int64_t to_split_axis, int64_t element_size);

// SliceOf's shape for the rank at `coords`, written into `*shape` (which
// holds the logical shape's rank): no checks, no allocation.
void SliceShape(const Shape& logical, const Shape& hierarchy, const NdSbp& nd_sbp,
                const std::vector<int64_t>& coords, Shape* shape);

// The orders of the changed axes (from[a] != to[a]) in which every axis
// step is sound, in std::next_permutation order from the sorted one.
std::vector<std::vector<int64_t>> SoundOrders(const NdSbp& from, const NdSbp& to);

// Whether the direct plan (one SEND_RECV in which every rank receives just
// what its target slice lacks) competes with the axis-by-axis plan
// (boxing.h): neither NdSbp has a P axis and at least two axes change. (A
// single sound axis step between S/B layouts already moves only what is
// missing.)
bool DirectCompetes(const NdSbp& from, const NdSbp& to);

// The direct plan replaces the axis-by-axis one when its (busiest rank,
// total) bytes are lexicographically smaller; a tie keeps the collectives.
inline bool DirectWins(std::pair<int64_t, int64_t> direct, std::pair<int64_t, int64_t> axis) {
  return direct < axis;
}

// Whether the direct plan needs pricing against axis steps of these
// (busiest, total) bytes: not when they move nothing (local slices), which
// no plan beats; a shortcut that changes no choice.
inline bool DirectCanWin(const NdSbp& from, const NdSbp& to, std::pair<int64_t, int64_t> axis) {
  return axis.second > 0 && DirectCompetes(from, to);
}

// The axis steps (axis, new Sbp) that reduce, outer axis to inner, every P
// axis of `from` whose target is not P (`target` null: every P axis).
std::vector<std::pair<int64_t, Sbp>> ReductionSteps(const Shape& logical, const NdSbp& from,
                                                    const NdSbp* target);

// The general SEND_RECV step (boxing.h): bytes sent by global rank (indexed
// up to the largest rank of either placement); `transfers` appended when not null.
std::vector<int64_t> SendRecvBytes(const TensorDesc& logical, const Placement& sp,
                                   const NdSbp& source, const Placement& tp, const NdSbp& target,
                                   std::vector<BoxTransfer>* transfers);

// The same as a BoxingStep; `transfers` filled when asked.
BoxingStep SendRecvStep(const TensorDesc& logical, const Placement& sp, const NdSbp& source,
                        const Placement& tp, const NdSbp& target, bool with_transfers);

// A tensor laid out by an NdSbp without P as a grid: per tensor axis its
// sorted cuts (begin, size), and per rank index of the placement its cell.
// It depends on the placement only through its hierarchy.
struct Grid {
  std::vector<std::vector<std::pair<int64_t, int64_t>>> cuts;
  std::vector<int64_t> strides;
  int64_t cells = 1;
  std::vector<int64_t> cell_of;
  // Per cell and tensor axis d, the index of its cut along d (at cell * ndim
  // + d): (cell / strides[d]) % cuts[d].size(), kept so that pricing a step
  // does not divide per cell.
  std::vector<int64_t> cut_index;
};

// What the SEND_RECV pricings of one cost-model build share: the grids per
// (shape, hierarchy, NdSbp), and the (busiest, total) bytes of a step within
// one placement per (shape, element size, hierarchy, source, target), where
// they depend on the placement only through its hierarchy. Not synchronised.
struct SendRecvMemo {
  using GridKey = std::tuple<std::vector<int64_t>, std::vector<int64_t>, NdSbp>;
  using BytesKey = std::tuple<std::vector<int64_t>, int64_t, std::vector<int64_t>, NdSbp, NdSbp>;
  std::map<GridKey, std::shared_ptr<const Grid>> grids;
  std::map<BytesKey, std::pair<int64_t, int64_t>> bytes;
};

// The SEND_RECV step's (busiest, total) bytes without walking its
// receivers, where that is exact (boxing_cells.cpp): the source has no P
// axis; requests are counted per target cell (the receivers wanting that
// slice, less the box's own holders); a box with one holder gets all of
// them in any order; a box with H holders whose m requests are all w bytes
// spreads them as at most w * ceil(m / H) (least loaded, then lowest rank).
// Empty when not exact (a box with several holders gets requests of
// different sizes): then SendRecvBytes walks the ranks.
// `memo` (may be null) keeps the grids between calls.
std::optional<std::pair<int64_t, int64_t>> SendRecvByCells(const TensorDesc& logical,
                                                           const Placement& sp, const NdSbp& source,
                                                           const Placement& tp, const NdSbp& target,
                                                           SendRecvMemo* memo = nullptr);

// The run [lo, hi) of `cuts` (sorted, disjoint (begin, size) pairs along one
// axis) that meets [begin, end). Both SEND_RECV walks use it.
template <typename Cuts>
std::pair<int64_t, int64_t> CutsMeeting(const Cuts& cuts, int64_t begin, int64_t end) {
  const auto lo = std::partition_point(cuts.begin(), cuts.end(),
                                       [&](const auto& x) { return x.first + x.second <= begin; });
  const auto hi =
      std::partition_point(lo, cuts.end(), [&](const auto& x) { return x.first < end; });
  return {lo - cuts.begin(), hi - cuts.begin()};
}

// Steps the multi-index `at` over the box [lo, hi) of a grid (last axis
// fastest) and keeps `*cell` (the flat index, by `strides`) in step; false
// once the box is done. Both SEND_RECV walks (rank and cell) use it.
inline bool NextCell(std::vector<int64_t>& at, const std::vector<int64_t>& lo,
                     const std::vector<int64_t>& hi, const std::vector<int64_t>& strides,
                     int64_t* cell) {
  for (int64_t d = static_cast<int64_t>(at.size()) - 1; d >= 0; --d) {
    *cell += strides[d];
    if (++at[d] < hi[d]) return true;
    *cell -= (hi[d] - lo[d]) * strides[d];
    at[d] = lo[d];
  }
  return false;
}

// The checks both planners run first (empty placements, device types, NdSbps).
Status CheckBoxing(const TensorDesc& logical, const Placement& from_placement, const NdSbp& from,
                   const Placement& to_placement, const NdSbp& to, const std::string& name);

}  // namespace ofl::boxing_internal
