// The boxing planner's byte counts per class of ranks (graph/boxing_cost.h).
#include "graph/boxing_cost.h"

#include <algorithm>
#include <optional>
#include <set>
#include <sstream>

#include "graph/boxing_rules.h"
#include "oneflow_lite/core/checked_math.h"
#include "oneflow_lite/core/slicing.h"

namespace ofl {

namespace {

using boxing_internal::AxisKind;
using boxing_internal::AxisStepBytes;
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
// (busiest, total) bytes; false when no order is sound.
bool AxisByAxis(const TensorDesc& logical, const Shape& h, const NdSbp& from, const NdSbp& to,
                BoxingCost* out) {
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
  std::pair<int64_t, int64_t> best_cost;
  for (const auto& path : paths) {
    std::vector<ClassStep> steps;
    NdSbp cur = from;
    for (const auto& [a, y] : path) {
      steps.push_back(AxisStepCost(logical, h, classes, cur, a, y));
      cur = steps.back().cost.to;
    }
    const auto cost = MaxAndTotal(steps, classes);
    if (best.empty() || cost < best_cost) {
      best = std::move(steps);
      best_cost = cost;
    }
  }
  for (ClassStep& s : best) out->steps.push_back(std::move(s.cost));
  return true;
}

// A tensor laid out by an NdSbp without P as a grid: per tensor axis its
// sorted cuts (begin, size), and per rank its cell.
struct Grid {
  std::vector<std::vector<std::pair<int64_t, int64_t>>> cuts;
  std::vector<int64_t> strides;
  int64_t cells = 1;
  std::vector<int64_t> cell_of;  // per rank index of the placement
};

Grid GridOf(const Shape& logical, const Placement& p, const NdSbp& nd_sbp) {
  const int64_t ndim = logical.ndim();
  const Shape& h = p.hierarchy();
  Grid g;
  g.cuts.assign(ndim, {});
  // Every rank's interval per tensor axis, flat (rank-major).
  std::vector<std::pair<int64_t, int64_t>> of_rank(p.size() * ndim);
  std::vector<int64_t> coords(h.ndim(), 0);  // row-major odometer
  for (int64_t i = 0; i < p.size(); ++i) {
    std::pair<int64_t, int64_t>* box = of_rank.data() + i * ndim;
    for (int64_t d = 0; d < ndim; ++d) box[d] = {0, logical[d]};
    for (int64_t a = 0; a < h.ndim(); ++a) {
      if (!nd_sbp[a].is_split()) continue;
      auto& [begin, size] = box[nd_sbp[a].axis()];
      const Range r = BalancedPart(size, h[a], coords[a]);
      begin += r.begin;
      size = r.size;
    }
    for (int64_t a = h.ndim() - 1; a >= 0; --a) {
      if (++coords[a] < h[a]) break;
      coords[a] = 0;
    }
  }
  for (int64_t d = 0; d < ndim; ++d) {
    for (int64_t i = 0; i < p.size(); ++i) g.cuts[d].push_back(of_rank[i * ndim + d]);
  }
  g.strides.assign(ndim, 1);
  for (int64_t d = ndim - 1; d >= 0; --d) {
    std::sort(g.cuts[d].begin(), g.cuts[d].end());
    g.cuts[d].erase(std::unique(g.cuts[d].begin(), g.cuts[d].end()), g.cuts[d].end());
    g.strides[d] = g.cells;
    g.cells *= static_cast<int64_t>(g.cuts[d].size());  // at most p.size()
  }
  g.cell_of.assign(p.size(), 0);
  for (int64_t i = 0; i < p.size(); ++i) {
    for (int64_t d = 0; d < ndim; ++d) {
      auto it = std::lower_bound(g.cuts[d].begin(), g.cuts[d].end(), of_rank[i * ndim + d]);
      g.cell_of[i] += (it - g.cuts[d].begin()) * g.strides[d];
    }
  }
  return g;
}

// The SEND_RECV step's busiest and total bytes without its per-receiver
// walk, where that is exact: the source has no P axis, and every box with
// several holders gets requests of one size (the least-loaded choice then
// spreads m requests of w bytes over H holders as w * ceil(m / H) at most;
// a box with one holder gets all its requests, in any order). Requests are
// counted per target cell: the receivers wanting that slice, less the box's
// own holders among them. Empty when not exact: the caller walks the ranks.
std::optional<std::pair<int64_t, int64_t>> SendRecvByCells(const TensorDesc& logical,
                                                           const Placement& sp, const NdSbp& source,
                                                           const Placement& tp,
                                                           const NdSbp& target) {
  for (int64_t a = 0; a < source.size(); ++a) {
    if (source[a].is_partial_sum()) return std::nullopt;
  }
  const int64_t ndim = logical.shape.ndim();
  const int64_t element_size = SizeOf(logical.dtype);
  NdSbp target_splits = target;  // P target axes: only coordinate 0 receives (no kept P here)
  for (int64_t a = 0; a < target.size(); ++a) {
    if (target[a].is_partial_sum()) target_splits = With(target_splits, a, Sbp::Broadcast());
  }
  const Grid src = GridOf(logical.shape, sp, source);
  const Grid dst = GridOf(logical.shape, tp, target_splits);
  int64_t max_rank = 0;
  for (int64_t r : sp.ranks()) max_rank = std::max(max_rank, r);
  for (int64_t r : tp.ranks()) max_rank = std::max(max_rank, r);
  std::vector<int64_t> src_cell_of_rank(max_rank + 1, -1);
  std::vector<int64_t> holders(src.cells, 0);
  for (int64_t i = 0; i < sp.size(); ++i) {
    src_cell_of_rank[sp.ranks()[i]] = src.cell_of[i];
    ++holders[src.cell_of[i]];
  }
  // Receivers per target cell, and per source cell the target cells of its
  // holders that receive.
  std::vector<int64_t> receivers(dst.cells, 0);
  std::vector<std::pair<int64_t, int64_t>> own;  // (source cell, target cell), sorted
  const Shape& th = tp.hierarchy();
  std::vector<int64_t> ct(th.ndim(), 0);
  for (int64_t i = 0; i < tp.size(); ++i) {
    bool zeros = false;
    for (int64_t a = 0; a < target.size(); ++a) zeros = zeros || (target[a].is_partial_sum() && ct[a] != 0);
    for (int64_t a = th.ndim() - 1; a >= 0; --a) {
      if (++ct[a] < th[a]) break;
      ct[a] = 0;
    }
    if (zeros) continue;
    const int64_t cell = dst.cell_of[i];
    ++receivers[cell];
    const int64_t held = src_cell_of_rank[tp.ranks()[i]];
    if (held >= 0) own.emplace_back(held, cell);
  }
  std::sort(own.begin(), own.end());
  // The target cells of box b's holders that receive.
  auto own_of = [&](int64_t b) {
    auto lo = std::lower_bound(own.begin(), own.end(), std::make_pair(b, int64_t{-1}));
    auto hi = std::lower_bound(lo, own.end(), std::make_pair(b + 1, int64_t{-1}));
    return std::make_pair(lo, hi);
  };
  int64_t max = 0, total = 0;
  std::vector<int64_t> lo(ndim), hi(ndim), at(ndim);
  std::vector<std::vector<int64_t>> overlap(ndim);
  // Per tensor axis and source cut: how many target cuts it meets with a
  // positive overlap, and that overlap when it is the same for all of them
  // (-1 when not). The cuts of both tile the axis.
  std::vector<std::vector<int64_t>> meets(ndim), uniform(ndim);
  for (int64_t d = 0; d < ndim; ++d) {
    const auto& cuts = dst.cuts[d];
    for (const auto& [begin, size] : src.cuts[d]) {
      int64_t n = 0, u = 0;
      auto first = std::partition_point(cuts.begin(), cuts.end(),
                                        [&](const auto& x) { return x.first + x.second <= begin; });
      // The cuts meeting [begin, begin + size): a chain over all source cuts, so cheap in total.
      for (auto it = first; it != cuts.end() && it->first < begin + size; ++it) {
        const auto [tb, ts] = *it;
        const int64_t x = std::max(begin, tb), y = std::min(begin + size, tb + ts);
        if (y <= x) continue;
        u = (n == 0 || u == y - x) ? y - x : -1;
        ++n;
      }
      meets[d].push_back(n);
      uniform[d].push_back(u);
    }
  }
  // Receivers per target cell of positive size (the others get nothing) are
  // usually one number, the replicas: then a box's requests are that many
  // per cell it meets, less its own holders'.
  int64_t replicas = -1;
  bool same_receivers = true;
  for (int64_t t = 0; t < dst.cells && same_receivers; ++t) {
    bool empty = false;
    for (int64_t d = 0; d < ndim; ++d) {
      empty = empty || dst.cuts[d][(t / dst.strides[d]) % dst.cuts[d].size()].second == 0;
    }
    if (empty) continue;
    same_receivers = replicas < 0 || receivers[t] == replicas;
    replicas = receivers[t];
  }
  auto own_elements = [&](int64_t b, int64_t t) {  // elements box b gives target cell t
    int64_t n = 1;
    for (int64_t d = 0; d < ndim; ++d) {
      const auto [sb, ss] = src.cuts[d][(b / src.strides[d]) % src.cuts[d].size()];
      const auto [tb, ts] = dst.cuts[d][(t / dst.strides[d]) % dst.cuts[d].size()];
      n *= std::max<int64_t>(0, std::min(sb + ss, tb + ts) - std::max(sb, tb));
    }
    return n;
  };
  for (int64_t b = 0; b < src.cells; ++b) {
    if (same_receivers && replicas >= 0) {
      int64_t elements = 1, cells = 1, size = 1;  // size: -1 when requests differ in size
      for (int64_t d = 0; d < ndim; ++d) {
        const int64_t i = (b / src.strides[d]) % src.cuts[d].size();
        elements *= src.cuts[d][i].second;
        cells *= meets[d][i];
        size = (size < 0 || uniform[d][i] < 0) ? -1 : size * uniform[d][i];
      }
      int64_t own_requests = 0, own_sum = 0;  // a holder's own slice comes from itself
      const auto [own_begin, own_end] = own_of(b);
      for (auto it = own_begin; it != own_end; ++it) {
        const int64_t e = own_elements(b, it->second);
        own_requests += e > 0;
        own_sum += e;
      }
      const int64_t requests = replicas * cells - own_requests;
      if (holders[b] == 1 || size >= 0 || requests == 0) {
        const int64_t load =
            SaturatingMul(SaturatingMul(replicas, elements) - own_sum, element_size);
        total = SaturatingAdd(total, load);
        if (requests > 0) {
          max = std::max(max, holders[b] == 1 ? load
                                              : SaturatingMul(SaturatingMul(size, element_size),
                                                              (requests + holders[b] - 1) /
                                                                  holders[b]));
        }
        continue;
      }
    }
    bool none = false;
    int64_t cell = 0;
    for (int64_t d = 0; d < ndim; ++d) {
      const auto [begin, size] = src.cuts[d][(b / src.strides[d]) % src.cuts[d].size()];
      const int64_t end = begin + size;
      const auto& cuts = dst.cuts[d];
      lo[d] = std::partition_point(cuts.begin(), cuts.end(),
                                   [&](const auto& x) { return x.first + x.second <= begin; }) -
              cuts.begin();
      hi[d] = std::partition_point(cuts.begin() + lo[d], cuts.end(),
                                   [&](const auto& x) { return x.first < end; }) -
              cuts.begin();
      none = none || lo[d] >= hi[d];
      at[d] = lo[d];
      cell += lo[d] * dst.strides[d];
      overlap[d].clear();
      for (int64_t i = lo[d]; i < hi[d]; ++i) {
        const int64_t x = std::max(begin, cuts[i].first);
        const int64_t y = std::min(end, cuts[i].first + cuts[i].second);
        overlap[d].push_back(std::max<int64_t>(0, y - x));
      }
    }
    int64_t load = 0, requests = 0, size = -1;  // one holder: load; several: m requests of `size`
    while (!none) {
      int64_t elements = 1;
      for (int64_t d = 0; d < ndim; ++d) elements *= overlap[d][at[d] - lo[d]];
      if (elements > 0) {
        const auto [own_begin, own_end] = own_of(b);
        const auto mine = std::equal_range(own_begin, own_end, std::make_pair(b, cell));
        const int64_t m = receivers[cell] - (mine.second - mine.first);
        const int64_t bytes = SaturatingMul(elements, element_size);
        if (m > 0) {
          if (holders[b] > 1 && size >= 0 && size != bytes) return std::nullopt;
          size = bytes;
          requests += m;
          load = SaturatingAdd(load, SaturatingMul(bytes, m));
        }
      }
      int64_t d = ndim - 1;
      for (; d >= 0; --d) {
        cell += dst.strides[d];
        if (++at[d] < hi[d]) break;
        cell -= (hi[d] - lo[d]) * dst.strides[d];
        at[d] = lo[d];
      }
      none = d < 0;
    }
    total = SaturatingAdd(total, load);
    if (requests == 0) continue;
    const int64_t busiest =
        holders[b] > 1 ? SaturatingMul(size, (requests + holders[b] - 1) / holders[b]) : load;
    max = std::max(max, busiest);
  }
  return std::make_pair(max, total);
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

Maybe<BoxingCost> PlanBoxingCost(const TensorDesc& logical, const Placement& from_placement,
                                 const NdSbp& from, const Placement& to_placement, const NdSbp& to,
                                 const std::string& name) {
  OFL_RETURN_IF_ERROR(
      boxing_internal::CheckBoxing(logical, from_placement, from, to_placement, to, name));
  BoxingCost cost;
  const Shape& h = from_placement.hierarchy();
  const bool same = from_placement == to_placement;
  if (same && from == to) return cost;
  if (same && AxisByAxis(logical, h, from, to, &cost)) return cost;
  const NdSbp cur = RunPath(logical, h, from,
                            boxing_internal::ReductionSteps(logical.shape, from, same ? &to : nullptr),
                            &cost);
  if (!same || cur != to) {
    BoxingStepCost step;
    step.kind = proto::BoxingConf::SEND_RECV;
    step.from = cur;
    step.to = to;
    auto by_cells = SendRecvByCells(logical, from_placement, cur, to_placement, to);
    if (by_cells) {
      step.max_bytes = by_cells->first;
      step.total_bytes = by_cells->second;
    } else {
      // Ranks of neither placement send nothing: the vector's max and sum are the step's.
      for (int64_t b : boxing_internal::SendRecvBytes(logical, from_placement, cur, to_placement,
                                                      to, /*transfers=*/nullptr)) {
        step.max_bytes = std::max(step.max_bytes, b);
        step.total_bytes = SaturatingAdd(step.total_bytes, b);
      }
    }
    cost.steps.push_back(std::move(step));
  }
  return cost;
}

BoxingCost CostOf(const BoxingPlan& plan) {
  BoxingCost cost;
  for (const BoxingStep& step : plan.steps) cost.steps.push_back(StepCostOf(step));
  return cost;
}

}  // namespace ofl
