#include "graph/boxing.h"

#include <algorithm>
#include <optional>
#include <sstream>

#include "graph/boxing_rules.h"
#include "oneflow_lite/core/checked_math.h"
#include "oneflow_lite/core/slicing.h"

namespace ofl {

namespace {

using Conf = proto::BoxingConf;

using boxing_internal::AxisKind;
using boxing_internal::AxisStepBytes;
using boxing_internal::CheckBoxing;
using boxing_internal::DirectCanWin;
using boxing_internal::DirectWins;
using boxing_internal::ReductionSteps;
using boxing_internal::SendRecvByCells;
using boxing_internal::SendRecvBytes;
using boxing_internal::SendRecvStep;
using boxing_internal::SliceShape;
using boxing_internal::SoundOrders;
using boxing_internal::With;

// One step on hierarchy axis `axis` of `placement` from `cur` to cur[axis] = y.
BoxingStep AxisStep(const TensorDesc& logical, const Placement& placement, const NdSbp& cur,
                    int64_t axis, const Sbp& y) {
  BoxingStep step;
  step.kind = AxisKind(cur[axis], y);
  step.hierarchy_axis = axis;
  step.from_placement = step.to_placement = placement;
  step.from = cur;
  step.to = With(cur, axis, y);
  const Shape& hierarchy = placement.hierarchy();
  std::vector<int64_t> coords(hierarchy.ndim(), 0);  // row-major odometer over the ranks
  Shape before = logical.shape, after = logical.shape;
  for (int64_t i = 0; i < placement.size(); ++i) {
    SliceShape(logical.shape, hierarchy, step.from, coords, &before);
    SliceShape(logical.shape, hierarchy, step.to, coords, &after);
    step.bytes_sent.emplace_hint(
        step.bytes_sent.end(), placement.ranks()[i],
        AxisStepBytes(step.kind, before, after, hierarchy[axis], coords[axis],
                      y.is_split() ? y.axis() : -1, SizeOf(logical.dtype)));
    for (int64_t a = hierarchy.ndim() - 1; a >= 0; --a) {
      if (++coords[a] < hierarchy[a]) break;
      coords[a] = 0;
    }
  }
  return step;
}

std::map<int64_t, int64_t> SumBytes(const std::vector<BoxingStep>& steps) {
  std::map<int64_t, int64_t> sum;
  for (const BoxingStep& s : steps) {
    if (sum.empty()) {
      sum = s.bytes_sent;
      continue;
    }
    auto hint = sum.begin();  // both maps are sorted: walk them together
    for (const auto& [rank, bytes] : s.bytes_sent) {
      while (hint != sum.end() && hint->first < rank) ++hint;
      if (hint != sum.end() && hint->first == rank) {
        hint->second = SaturatingAdd(hint->second, bytes);
      } else {
        hint = sum.emplace_hint(hint, rank, bytes);
      }
    }
  }
  return sum;
}

std::pair<int64_t, int64_t> MaxAndTotal(const std::map<int64_t, int64_t>& bytes) {
  int64_t max = 0, total = 0;
  for (const auto& [rank, b] : bytes) {
    max = std::max(max, b);
    total = SaturatingAdd(total, b);
  }
  return {max, total};
}

// Axis by axis: the cheapest order (busiest rank, then total, then the
// first order in lexicographic order) in which every step is sound; none
// when no order is.
std::optional<std::vector<BoxingStep>> PlanAxisByAxis(const TensorDesc& logical,
                                                      const Placement& placement, const NdSbp& from,
                                                      const NdSbp& to) {
  std::optional<std::vector<BoxingStep>> best;
  std::pair<int64_t, int64_t> best_cost;
  for (const std::vector<int64_t>& order : SoundOrders(from, to)) {
    std::vector<BoxingStep> steps;
    NdSbp cur = from;
    for (int64_t a : order) {
      steps.push_back(AxisStep(logical, placement, cur, a, to[a]));
      cur = steps.back().to;
    }
    auto cost = MaxAndTotal(SumBytes(steps));
    if (!best || cost < best_cost) {
      best = std::move(steps);
      best_cost = cost;
    }
  }
  return best;
}

// Reduces, outer axis to inner, every P axis of `*cur` whose target is not
// P (`target` null: every P axis); appends the steps.
void ReducePartialAxes(const TensorDesc& logical, const Placement& placement, const NdSbp* target,
                       NdSbp* cur, std::vector<BoxingStep>* steps) {
  for (const auto& [a, y] : ReductionSteps(logical.shape, *cur, target)) {
    steps->push_back(AxisStep(logical, placement, *cur, a, y));
    *cur = steps->back().to;
  }
}

// The direct plan's (busiest, total) bytes without its boxes: per cell
// where that is exact, else by the walk over the receivers.
std::pair<int64_t, int64_t> DirectBytes(const TensorDesc& logical, const Placement& placement,
                                        const NdSbp& from, const NdSbp& to) {
  if (auto by_cells = SendRecvByCells(logical, placement, from, placement, to)) return *by_cells;
  int64_t max = 0, total = 0;
  for (int64_t b : SendRecvBytes(logical, placement, from, placement, to, nullptr)) {
    max = std::max(max, b);
    total = SaturatingAdd(total, b);
  }
  return {max, total};
}

// Same placement, from != to: the cheapest sound axis-by-axis plan, or the
// direct SEND_RECV when it competes and wins (boxing.h); none when no order
// is sound.
std::optional<std::vector<BoxingStep>> PlanSamePlacement(const TensorDesc& logical,
                                                         const Placement& placement,
                                                         const NdSbp& from, const NdSbp& to,
                                                         bool with_transfers) {
  auto steps = PlanAxisByAxis(logical, placement, from, to);
  if (!steps) return steps;
  const std::pair<int64_t, int64_t> axis = MaxAndTotal(SumBytes(*steps));
  if (DirectCanWin(from, to, axis) && DirectWins(DirectBytes(logical, placement, from, to), axis)) {
    steps->clear();
    steps->push_back(SendRecvStep(logical, placement, from, placement, to, with_transfers));
  }
  return steps;
}

std::string BytesToString(const std::map<int64_t, int64_t>& bytes) {
  std::ostringstream out;
  out << "{";
  for (auto it = bytes.begin(); it != bytes.end(); ++it) {
    out << (it == bytes.begin() ? "" : ", ") << it->first << ": " << it->second;
  }
  out << "}";
  return out.str();
}

}  // namespace

const char* BoxingKindName(proto::BoxingConf::Kind kind) {
  switch (kind) {
    case Conf::IDENTITY:
      return "IDENTITY";
    case Conf::ALL_REDUCE:
      return "ALL_REDUCE";
    case Conf::REDUCE_SCATTER:
      return "REDUCE_SCATTER";
    case Conf::ALL_GATHER:
      return "ALL_GATHER";
    case Conf::ALL_TO_ALL:
      return "ALL_TO_ALL";
    case Conf::LOCAL_SLICE:
      return "LOCAL_SLICE";
    case Conf::ZERO_FILL:
      return "ZERO_FILL";
    case Conf::SCATTER_LOCAL:
      return "SCATTER_LOCAL";
    case Conf::SEND_RECV:
      return "SEND_RECV";
    default:
      return "UNKNOWN";
  }
}

std::string BoxingStep::ToString() const {
  std::ostringstream out;
  out << BoxingKindName(kind);
  if (hierarchy_axis >= 0) out << " on hierarchy axis " << hierarchy_axis;
  out << ": " << from;
  if (from_placement != to_placement) out << " on " << from_placement.ToString();
  out << " -> " << to;
  if (from_placement != to_placement) out << " on " << to_placement.ToString();
  if (kind == Conf::SEND_RECV) out << ", " << transfers.size() << " boxes";
  out << "; bytes sent " << BytesToString(bytes_sent);
  return out.str();
}

int64_t BoxingPlan::MaxBytesSent() const { return MaxAndTotal(bytes_sent).first; }
int64_t BoxingPlan::TotalBytesSent() const { return MaxAndTotal(bytes_sent).second; }

std::string BoxingPlan::ToString() const {
  std::ostringstream out;
  out << "boxing " << logical.shape << " " << DataTypeName(logical.dtype) << " from " << from
      << " on " << from_placement.ToString() << " to " << to << " on " << to_placement.ToString()
      << ": " << steps.size() << " step(s), bytes sent " << BytesToString(bytes_sent) << "\n";
  for (size_t i = 0; i < steps.size(); ++i) out << "  " << i << ". " << steps[i].ToString() << "\n";
  return out.str();
}

namespace {

Maybe<BoxingPlan> Plan(const TensorDesc& logical, const Placement& from_placement,
                       const NdSbp& from, const Placement& to_placement, const NdSbp& to,
                       const std::string& name, bool with_transfers) {
  OFL_RETURN_IF_ERROR(CheckBoxing(logical, from_placement, from, to_placement, to, name));
  BoxingPlan plan;
  plan.logical = logical;
  plan.from_placement = from_placement;
  plan.from = from;
  plan.to_placement = to_placement;
  plan.to = to;
  if (from_placement == to_placement) {
    if (from != to) {
      auto axis_steps = PlanSamePlacement(logical, from_placement, from, to, with_transfers);
      if (axis_steps) {
        plan.steps = std::move(*axis_steps);
      } else {
        NdSbp cur = from;
        ReducePartialAxes(logical, from_placement, &to, &cur, &plan.steps);
        if (cur != to)
          plan.steps.push_back(
              SendRecvStep(logical, from_placement, cur, to_placement, to, with_transfers));
      }
    }
  } else {
    NdSbp cur = from;
    ReducePartialAxes(logical, from_placement, nullptr, &cur, &plan.steps);
    plan.steps.push_back(
        SendRecvStep(logical, from_placement, cur, to_placement, to, with_transfers));
  }
  for (int64_t r : from_placement.ranks()) plan.bytes_sent[r] = 0;
  for (int64_t r : to_placement.ranks()) plan.bytes_sent[r] = 0;
  for (const auto& [rank, bytes] : SumBytes(plan.steps)) plan.bytes_sent[rank] += bytes;
  return plan;
}

}  // namespace

Maybe<BoxingPlan> PlanBoxing(const TensorDesc& logical, const Placement& from_placement,
                             const NdSbp& from, const Placement& to_placement, const NdSbp& to,
                             const std::string& name) {
  return Plan(logical, from_placement, from, to_placement, to, name, /*with_transfers=*/true);
}

Maybe<BoxingPlan> PlanBoxingBytes(const TensorDesc& logical, const Placement& from_placement,
                                  const NdSbp& from, const Placement& to_placement, const NdSbp& to,
                                  const std::string& name) {
  return Plan(logical, from_placement, from, to_placement, to, name, /*with_transfers=*/false);
}

}  // namespace ofl
