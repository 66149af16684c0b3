// The boxing planner's byte counts per class of ranks (graph/boxing_cost.h).
#include "graph/boxing_cost.h"

#include <algorithm>
#include <optional>
#include <set>
#include <sstream>

#include "graph/boxing_rules.h"
#include "oneflow_lite/core/checked_math.h"

namespace ofl {

namespace {

using boxing_internal::AxisKind;
using boxing_internal::AxisStepBytes;
using boxing_internal::SendRecvMemo;
using boxing_internal::SliceShape;
using boxing_internal::With;

// Representative ranks: per class its coordinates and how many ranks it stands for.
struct Classes {
  std::vector<std::vector<int64_t>> coords;
  std::vector<int64_t> weights;
};

// Adds to `bounds[a]` every `size % h[a]` at which the parts of axis a change
// size for a slice under `nd_sbp`, and every `n % h[a]` for the possible
// element counts n of that slice (an all-reduce on axis a gives position c
// one more element of n when c < n % h[a]). Sizes are tracked as sets: a
// balanced split of s by p leaves s / p or s / p + 1.
void AddBounds(const Shape& logical, const Shape& h, const NdSbp& nd_sbp,
               std::vector<std::set<int64_t>>* bounds) {
  std::vector<std::set<int64_t>> sizes(logical.ndim());
  for (int64_t d = 0; d < logical.ndim(); ++d) sizes[d] = {logical[d]};
  for (int64_t a = 0; a < h.ndim(); ++a) {
    if (!nd_sbp[a].is_split()) continue;
    std::set<int64_t>& dim = sizes[nd_sbp[a].axis()];
    std::set<int64_t> next;
    for (int64_t s : dim) {
      (*bounds)[a].insert(s % h[a]);
      next.insert(s / h[a]);
      if (s % h[a] > 0) next.insert(s / h[a] + 1);
    }
    dim = std::move(next);
  }
  std::set<int64_t> counts = {1};
  for (const std::set<int64_t>& dim : sizes) {
    std::set<int64_t> next;
    for (int64_t n : counts) {
      for (int64_t s : dim) next.insert(SaturatingMul(n, s));
    }
    counts = std::move(next);
  }
  for (int64_t a = 0; a < h.ndim(); ++a) {
    for (int64_t n : counts) (*bounds)[a].insert(n % h[a]);
  }
}

// The classes of ranks that send alike in axis steps between any of `sbps`.
Classes ClassesFor(const Shape& logical, const Shape& h, const std::vector<NdSbp>& sbps) {
  std::vector<std::set<int64_t>> bounds(h.ndim());
  for (int64_t a = 0; a < h.ndim(); ++a) bounds[a] = {0, h[a]};
  for (const NdSbp& s : sbps) AddBounds(logical, h, s, &bounds);
  Classes out;
  out.coords = {{}};
  out.weights = {1};
  for (int64_t a = 0; a < h.ndim(); ++a) {
    const std::vector<int64_t> b(bounds[a].begin(), bounds[a].end());
    Classes next;
    for (size_t c = 0; c < out.coords.size(); ++c) {
      for (size_t i = 0; i + 1 < b.size(); ++i) {
        next.coords.push_back(out.coords[c]);
        next.coords.back().push_back(b[i]);
        next.weights.push_back(out.weights[c] * (b[i + 1] - b[i]));
      }
    }
    out = std::move(next);
  }
  return out;
}

// An axis step's cost and each class's bytes in it.
struct ClassStep {
  BoxingStepCost cost;
  std::vector<int64_t> bytes;  // per class
};

ClassStep AxisStepCost(const TensorDesc& logical, const Shape& h, const Classes& classes,
                       const NdSbp& cur, int64_t axis, const Sbp& y) {
  ClassStep step;
  step.cost.kind = AxisKind(cur[axis], y);
  step.cost.hierarchy_axis = axis;
  step.cost.from = cur;
  step.cost.to = With(cur, axis, y);
  Shape before = logical.shape, after = logical.shape;
  step.bytes.reserve(classes.coords.size());
  for (size_t c = 0; c < classes.coords.size(); ++c) {
    const std::vector<int64_t>& coords = classes.coords[c];
    SliceShape(logical.shape, h, step.cost.from, coords, &before);
    SliceShape(logical.shape, h, step.cost.to, coords, &after);
    const int64_t b = AxisStepBytes(step.cost.kind, before, after, h[axis], coords[axis],
                                    y.is_split() ? y.axis() : -1, SizeOf(logical.dtype));
    step.bytes.push_back(b);
    step.cost.max_bytes = std::max(step.cost.max_bytes, b);
    step.cost.total_bytes =
        SaturatingAdd(step.cost.total_bytes, SaturatingMul(b, classes.weights[c]));
  }
  return step;
}

// The busiest rank's bytes over all `steps` and every rank's together, as
// boxing.cpp's MaxAndTotal(SumBytes(steps)).
std::pair<int64_t, int64_t> MaxAndTotal(const std::vector<ClassStep>& steps,
                                        const Classes& classes) {
  int64_t max = 0, total = 0;
  for (size_t c = 0; c < classes.weights.size(); ++c) {
    int64_t sum = 0;
    for (const ClassStep& s : steps) sum = SaturatingAdd(sum, s.bytes[c]);
    max = std::max(max, sum);
    total = SaturatingAdd(total, SaturatingMul(sum, classes.weights[c]));
  }
  return {max, total};
}

// The NdSbps a sequence of axis steps passes through, from `from` on.
void AddPath(const NdSbp& from, const std::vector<std::pair<int64_t, Sbp>>& path,
             std::vector<NdSbp>* sbps) {
  NdSbp cur = from;
  sbps->push_back(cur);
  for (const auto& [a, y] : path) {
    cur = With(cur, a, y);
    sbps->push_back(cur);
  }
}

// Runs `path` from `from` on the classes of `sbps`; appends the steps'
// costs to `out` and returns where it ends.
NdSbp RunPath(const TensorDesc& logical, const Shape& h, const NdSbp& from,
              const std::vector<std::pair<int64_t, Sbp>>& path, BoxingCost* out) {
  std::vector<NdSbp> sbps;
  AddPath(from, path, &sbps);
  const Classes classes = ClassesFor(logical.shape, h, sbps);
  NdSbp cur = from;
  for (const auto& [a, y] : path) {
    out->steps.push_back(AxisStepCost(logical, h, classes, cur, a, y).cost);
    cur = out->steps.back().to;
  }
  return cur;
}

// PlanAxisByAxis per class: the same orders, compared by the same
// (busiest, total) bytes, the chosen one's in `*best_cost`; false when no
// order is sound.
bool AxisByAxis(const TensorDesc& logical, const Shape& h, const NdSbp& from, const NdSbp& to,
                BoxingCost* out, std::pair<int64_t, int64_t>* best_cost) {
  const std::vector<std::vector<int64_t>> orders = boxing_internal::SoundOrders(from, to);
  if (orders.empty()) return false;
  std::vector<std::vector<std::pair<int64_t, Sbp>>> paths;
  std::vector<NdSbp> sbps;
  for (const std::vector<int64_t>& order : orders) {
    paths.emplace_back();
    for (int64_t a : order) paths.back().emplace_back(a, to[a]);
    AddPath(from, paths.back(), &sbps);
  }
  std::sort(sbps.begin(), sbps.end());
  sbps.erase(std::unique(sbps.begin(), sbps.end()), sbps.end());
  const Classes classes = ClassesFor(logical.shape, h, sbps);
  std::vector<ClassStep> best;
  for (const auto& path : paths) {
    std::vector<ClassStep> steps;
    NdSbp cur = from;
    for (const auto& [a, y] : path) {
      steps.push_back(AxisStepCost(logical, h, classes, cur, a, y));
      cur = steps.back().cost.to;
    }
    const auto cost = MaxAndTotal(steps, classes);
    if (best.empty() || cost < *best_cost) {
      best = std::move(steps);
      *best_cost = cost;
    }
  }
  for (ClassStep& s : best) out->steps.push_back(std::move(s.cost));
  return true;
}

// The SEND_RECV step's (busiest, total) bytes: per cell where that is exact,
// else by the walk over the receivers.
std::pair<int64_t, int64_t> SendRecvTotals(const TensorDesc& logical, const Placement& sp,
                                           const NdSbp& source, const Placement& tp,
                                           const NdSbp& target, SendRecvMemo* memo) {
  if (auto by_cells = boxing_internal::SendRecvByCells(logical, sp, source, tp, target, memo)) {
    return *by_cells;
  }
  // Ranks of neither placement send nothing: the vector's max and sum are the step's.
  std::pair<int64_t, int64_t> bytes{0, 0};
  for (int64_t b :
       boxing_internal::SendRecvBytes(logical, sp, source, tp, target, /*transfers=*/nullptr)) {
    bytes.first = std::max(bytes.first, b);
    bytes.second = SaturatingAdd(bytes.second, b);
  }
  return bytes;
}

// The SEND_RECV step from (sp, source) to (tp, target), from `memo` when it
// has it (and kept there) where its key holds.
BoxingStepCost SendRecvCost(const TensorDesc& logical, const Placement& sp, const NdSbp& source,
                            const Placement& tp, const NdSbp& target, SendRecvMemo* memo) {
  BoxingStepCost step;
  step.kind = proto::BoxingConf::SEND_RECV;
  step.from = source;
  step.to = target;
  std::pair<int64_t, int64_t> bytes;
  if (memo != nullptr && sp == tp && std::is_sorted(sp.ranks().begin(), sp.ranks().end())) {
    // Within one placement the bytes depend on it only through its hierarchy
    // (and, in the walk, on the order of its ranks: ascending here).
    SendRecvMemo::BytesKey key{logical.shape.dims(), SizeOf(logical.dtype), sp.hierarchy().dims(),
                               source, target};
    auto it = memo->bytes.find(key);
    if (it == memo->bytes.end()) {
      it =
          memo->bytes.emplace(std::move(key), SendRecvTotals(logical, sp, source, tp, target, memo))
              .first;
    }
    bytes = it->second;
  } else {
    bytes = SendRecvTotals(logical, sp, source, tp, target, memo);
  }
  step.max_bytes = bytes.first;
  step.total_bytes = bytes.second;
  return step;
}

BoxingStepCost StepCostOf(const BoxingStep& step) {
  BoxingStepCost cost;
  cost.kind = step.kind;
  cost.hierarchy_axis = step.hierarchy_axis;
  cost.from = step.from;
  cost.to = step.to;
  for (const auto& [rank, b] : step.bytes_sent) {
    cost.max_bytes = std::max(cost.max_bytes, b);
    cost.total_bytes = SaturatingAdd(cost.total_bytes, b);
  }
  return cost;
}

}  // namespace

std::string BoxingStepCost::ToString() const {
  std::ostringstream out;
  out << BoxingKindName(kind);
  if (hierarchy_axis >= 0) out << " on hierarchy axis " << hierarchy_axis;
  out << ": " << from << " -> " << to << "; busiest rank " << max_bytes << " bytes, all ranks "
      << total_bytes;
  return out.str();
}

BoxingCostCache::BoxingCostCache() : memo_(std::make_unique<SendRecvMemo>()) {}
BoxingCostCache::~BoxingCostCache() = default;
BoxingCostCache::BoxingCostCache(BoxingCostCache&&) noexcept = default;
BoxingCostCache& BoxingCostCache::operator=(BoxingCostCache&&) noexcept = default;

Maybe<BoxingCost> PlanBoxingCost(const TensorDesc& logical, const Placement& from_placement,
                                 const NdSbp& from, const Placement& to_placement, const NdSbp& to,
                                 const std::string& name, BoxingCostCache* cache) {
  SendRecvMemo* memo = cache != nullptr ? &cache->memo() : nullptr;
  OFL_RETURN_IF_ERROR(
      boxing_internal::CheckBoxing(logical, from_placement, from, to_placement, to, name));
  BoxingCost cost;
  const Shape& h = from_placement.hierarchy();
  const bool same = from_placement == to_placement;
  if (same && from == to) return cost;
  std::pair<int64_t, int64_t> axis_bytes;
  if (same && AxisByAxis(logical, h, from, to, &cost, &axis_bytes)) {
    if (boxing_internal::DirectCanWin(from, to, axis_bytes)) {
      BoxingStepCost direct = SendRecvCost(logical, from_placement, from, to_placement, to, memo);
      if (boxing_internal::DirectWins({direct.max_bytes, direct.total_bytes}, axis_bytes)) {
        cost.steps = {std::move(direct)};
      }
    }
    return cost;
  }
  const NdSbp cur =
      RunPath(logical, h, from,
              boxing_internal::ReductionSteps(logical.shape, from, same ? &to : nullptr), &cost);
  if (!same || cur != to) {
    cost.steps.push_back(SendRecvCost(logical, from_placement, cur, to_placement, to, memo));
  }
  return cost;
}

BoxingCost CostOf(const BoxingPlan& plan) {
  BoxingCost cost;
  for (const BoxingStep& step : plan.steps) cost.steps.push_back(StepCostOf(step));
  return cost;
}

}  // namespace ofl
