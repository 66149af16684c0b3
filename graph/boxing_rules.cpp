// The boxing planner's shared rules (graph/boxing_rules.h).
#include "graph/boxing_rules.h"

#include <glog/logging.h>

#include <algorithm>
#include <functional>
#include <map>
#include <tuple>

#include "oneflow_lite/core/checked_math.h"
#include "oneflow_lite/core/slicing.h"

namespace ofl::boxing_internal {

using Conf = proto::BoxingConf;

NdSbp With(const NdSbp& nd_sbp, int64_t axis, const Sbp& sbp) {
  std::vector<Sbp> axes = nd_sbp.axes();
  axes[axis] = sbp;
  return NdSbp(std::move(axes));
}

// The 1-D conversion x -> y (x != y) as one step kind (DESIGN.md section 5).
Conf::Kind AxisKind(const Sbp& x, const Sbp& y) {
  if (x.is_partial_sum()) return y.is_broadcast() ? Conf::ALL_REDUCE : Conf::REDUCE_SCATTER;
  if (x.is_split()) {
    if (y.is_broadcast()) return Conf::ALL_GATHER;
    return y.is_split() ? Conf::ALL_TO_ALL : Conf::SCATTER_LOCAL;
  }
  return y.is_split() ? Conf::LOCAL_SLICE : Conf::ZERO_FILL;
}

// Whether changing hierarchy axis `axis` of `cur` to `y` is a 1-D conversion
// on the groups of that axis: no inner axis may split a tensor axis that the
// step splits or gathers (inner cuts would interleave the members' pieces).
bool StepSound(const NdSbp& cur, int64_t axis, const Sbp& y) {
  for (int64_t b = axis + 1; b < cur.size(); ++b) {
    if (!cur[b].is_split()) continue;
    if ((cur[axis].is_split() && cur[axis].axis() == cur[b].axis()) ||
        (y.is_split() && y.axis() == cur[b].axis())) {
      return false;
    }
  }
  return true;
}

int64_t ProductExcept(const Shape& shape, int64_t skip) {
  int64_t n = 1;
  for (int64_t d = 0; d < shape.ndim(); ++d) {
    if (d != skip) n *= shape[d];
  }
  return n;
}

// Bytes one rank sends in an axis step, from its slice shapes before and
// after and the group size p, as runtime/inprocess_communicator.cpp counts them.
int64_t AxisStepBytes(Conf::Kind kind, const Shape& before, const Shape& after, int64_t p,
                      int64_t position, int64_t to_split_axis, int64_t element_size) {
  const int64_t n = before.NumElements();
  int64_t elements = 0;
  switch (kind) {
    case Conf::ALL_REDUCE: {  // direct: reduce-scatter phase, then all-gather phase
      int64_t own = BalancedPart(n, p, position).size;
      elements = SaturatingAdd(n - own, SaturatingMul(p - 1, own));
      break;
    }
    case Conf::REDUCE_SCATTER:  // every peer's part of this rank's addend
      elements = n - after.NumElements();
      break;
    case Conf::ALL_GATHER:  // this rank's part to each of the p - 1 peers
      elements = SaturatingMul(p - 1, n);
      break;
    case Conf::ALL_TO_ALL: {  // its rows of every peer's columns
      const int64_t e = to_split_axis;
      elements = SaturatingMul(ProductExcept(before, e), before[e] - after[e]);
      break;
    }
    default:
      break;  // local steps move nothing
  }
  return SaturatingMul(elements, element_size);
}

// SliceOf's shape for the rank at `coords`, written into `*shape` (which
// holds the logical shape's rank): no checks, no allocation.
void SliceShape(const Shape& logical, const Shape& hierarchy, const NdSbp& nd_sbp,
                const std::vector<int64_t>& coords, Shape* shape) {
  for (int64_t d = 0; d < logical.ndim(); ++d) (*shape)[d] = logical[d];
  for (int64_t a = 0; a < hierarchy.ndim(); ++a) {
    if (!nd_sbp[a].is_split()) continue;
    int64_t& size = (*shape)[nd_sbp[a].axis()];
    size = BalancedPart(size, hierarchy[a], coords[a]).size;
  }
}

namespace {

// What a P axis that must go reduces to: `preferred` (the target's Sbp on
// that axis) when it is S or B and sound, else a split of the longest
// tensor axis that is sound (reduce-scatter moves half of an all-reduce),
// else B.
Sbp ReductionTarget(const Shape& logical, const NdSbp& cur, int64_t axis, const Sbp* preferred) {
  if (preferred != nullptr && !preferred->is_partial_sum() && StepSound(cur, axis, *preferred)) {
    return *preferred;
  }
  int64_t best = -1;
  for (int64_t d = 0; d < logical.ndim(); ++d) {
    if (StepSound(cur, axis, Sbp::Split(d)) && (best < 0 || logical[d] > logical[best])) best = d;
  }
  return best >= 0 ? Sbp::Split(best) : Sbp::Broadcast();
}

struct Box {
  std::vector<int64_t> offset;
  Shape shape;
  bool operator==(const Box& o) const { return offset == o.offset && shape == o.shape; }
  bool operator<(const Box& o) const {
    return offset != o.offset ? offset < o.offset : shape.dims() < o.shape.dims();
  }
};

// Elements of the overlap of `a` and `b` (no allocation).
int64_t OverlapElements(const Box& a, const Box& b) {
  int64_t n = 1;
  for (int64_t d = 0; d < a.shape.ndim() && n > 0; ++d) {
    int64_t begin = std::max(a.offset[d], b.offset[d]);
    int64_t end = std::min(a.offset[d] + a.shape[d], b.offset[d] + b.shape[d]);
    n *= std::max<int64_t>(0, end - begin);
  }
  return n;
}

Box Intersect(const Box& a, const Box& b) {
  Box out{a.offset, a.shape};
  for (int64_t d = 0; d < a.shape.ndim(); ++d) {
    int64_t begin = std::max(a.offset[d], b.offset[d]);
    int64_t end = std::min(a.offset[d] + a.shape[d], b.offset[d] + b.shape[d]);
    out.offset[d] = begin;
    out.shape[d] = std::max<int64_t>(0, end - begin);
  }
  return out;
}

// Distinct boxes (in source order) and the ranks holding each.
using Holders = std::vector<std::pair<Box, std::vector<int64_t>>>;

}  // namespace

// The general step: every target rank receives the overlaps of its target
// slice with the distinct source slices. P axes of `source` must also be P
// in `target` on the same placement ("kept": only ranks with the same
// coordinate there exchange); a P target axis that is not kept is filled by
// the ranks at coordinate 0 of it, the others hold zeros.
// Source slices are computed once, the holders once per coordinate class
// of the receivers on the source's P axes (all receivers share one class
// when the source has no P axis), and each receiver visits only the holders
// whose boxes can meet its slice.
std::vector<int64_t> SendRecvBytes(const TensorDesc& logical, const Placement& sp,
                                   const NdSbp& source, const Placement& tp, const NdSbp& target,
                                   std::vector<BoxTransfer>* transfers) {
  const bool same = sp == tp;
  const int64_t element_size = SizeOf(logical.dtype);
  std::vector<int64_t> partial_axes;
  for (int64_t a = 0; a < source.size(); ++a) {
    if (source[a].is_partial_sum()) partial_axes.push_back(a);
  }
  std::vector<std::vector<int64_t>> source_coords(sp.size());
  std::vector<Box> source_boxes(sp.size());
  for (int64_t si = 0; si < sp.size(); ++si) {
    source_coords[si] = sp.Coordinates(si);
    TensorSlice s = SliceOf(logical.shape, sp.hierarchy(), source, source_coords[si]);
    source_boxes[si] = Box{s.offset, s.shape};
  }
  const int64_t max_rank = std::max(*std::max_element(sp.ranks().begin(), sp.ranks().end()),
                                    *std::max_element(tp.ranks().begin(), tp.ranks().end()));
  // Each source rank holds one box of one class: its holder id (-1: none yet).
  std::vector<int64_t> holder_id(max_rank + 1, -1);
  int64_t next_id = 0;
  // Holders per class, and an index over them: holder positions sorted by
  // their box's offset on `axis` (the tensor axis where boxes differ most);
  // boxes of one class tile the tensor, so along `axis` they form a
  // partition and the ones meeting a range are found by binary search.
  // Per box, a min-heap of its holders by (bytes sent, rank): the sender
  // choice (least loaded, then lowest rank) is its top; only this box's
  // requests load them (boxes have disjoint holders).
  using Load = std::pair<int64_t, int64_t>;  // (bytes sent, rank)
  struct Class {
    Holders holders;
    int64_t first_id = 0;
    std::vector<std::vector<std::pair<int64_t, int64_t>>> cuts;  // per axis: (begin, size)
    std::vector<int64_t> strides;
    std::vector<int64_t> grid;  // cell -> holder index, -1 when no box is there
    std::vector<std::vector<Load>> loads;
  };
  std::map<std::vector<int64_t>, Class> classes;
  std::vector<int64_t> key;
  auto class_for = [&](const std::vector<int64_t>& ct) -> Class& {
    key.clear();
    for (int64_t a : partial_axes) key.push_back(ct[a]);
    auto it = classes.find(key);
    if (it != classes.end()) return it->second;
    Class c;
    std::map<Box, size_t> index;
    for (int64_t si = 0; si < sp.size(); ++si) {
      bool eligible = true;
      for (int64_t a : partial_axes) eligible = eligible && source_coords[si][a] == ct[a];
      if (!eligible) continue;
      auto [pos, fresh] = index.emplace(source_boxes[si], c.holders.size());
      if (fresh) c.holders.push_back({source_boxes[si], {}});
      c.holders[pos->second].second.push_back(sp.ranks()[si]);
    }
    c.first_id = next_id;
    next_id += static_cast<int64_t>(c.holders.size());
    c.loads.resize(c.holders.size());
    for (size_t h = 0; h < c.holders.size(); ++h) {
      for (int64_t r : c.holders[h].second) {
        holder_id[r] = c.first_id + static_cast<int64_t>(h);
        c.loads[h].emplace_back(0, r);
      }
      std::make_heap(c.loads[h].begin(), c.loads[h].end(), std::greater<>());
    }
    // The grid index: per tensor axis the distinct (begin, size) of the
    // boxes, sorted (they tile the axis, so ends are sorted too), and the
    // holder of each combination.
    const int64_t ndim = logical.shape.ndim();
    c.cuts.assign(ndim, {});
    for (const auto& h : c.holders) {
      for (int64_t d = 0; d < ndim; ++d)
        c.cuts[d].emplace_back(h.first.offset[d], h.first.shape[d]);
    }
    int64_t cells = 1;
    c.strides.assign(ndim, 1);
    for (int64_t d = ndim - 1; d >= 0; --d) {
      std::sort(c.cuts[d].begin(), c.cuts[d].end());
      c.cuts[d].erase(std::unique(c.cuts[d].begin(), c.cuts[d].end()), c.cuts[d].end());
      c.strides[d] = cells;
      cells = SaturatingMul(cells, static_cast<int64_t>(c.cuts[d].size()));
    }
    // Every combination is a box: each axis's cut depends only on the mesh
    // axes that split it, and the class ranges over all of them.
    CHECK_EQ(cells, static_cast<int64_t>(c.holders.size())) << "boxing: boxes are not a grid";
    c.grid.assign(cells, -1);
    for (size_t h = 0; h < c.holders.size(); ++h) {
      int64_t cell = 0;
      for (int64_t d = 0; d < ndim; ++d) {
        const Box& b = c.holders[h].first;
        auto it = std::lower_bound(c.cuts[d].begin(), c.cuts[d].end(),
                                   std::make_pair(b.offset[d], b.shape[d]));
        cell += (it - c.cuts[d].begin()) * c.strides[d];
      }
      c.grid[cell] = static_cast<int64_t>(h);
    }
    return classes.emplace(key, std::move(c)).first->second;
  };
  std::vector<int64_t> sent(max_rank + 1, 0);  // by global rank
  std::vector<size_t> meeting;
  const int64_t ndim = logical.shape.ndim();
  std::vector<int64_t> lo(ndim), hi(ndim), at(ndim);
  std::vector<std::vector<int64_t>> overlap(ndim);
  // `bytes` of box h of class c to `receiver`: from itself when it holds
  // the box, else from the least-loaded holder (then the lowest rank).
  // Returns the sender.
  auto send = [&](Class& c, size_t h, int64_t receiver, int64_t bytes) {
    if (holder_id[receiver] == c.first_id + static_cast<int64_t>(h)) return receiver;
    std::vector<Load>& heap = c.loads[h];
    std::pop_heap(heap.begin(), heap.end(), std::greater<>());
    const int64_t sender = heap.back().second;
    sent[sender] += bytes;
    heap.back().first = sent[sender];
    std::push_heap(heap.begin(), heap.end(), std::greater<>());
    return sender;
  };
  const Shape& th = tp.hierarchy();
  std::vector<int64_t> ct(th.ndim(), 0);  // row-major odometer over the receivers
  Box need{std::vector<int64_t>(logical.shape.ndim()), logical.shape};
  for (int64_t ti = 0; ti < tp.size(); ++ti) {
    if (ti > 0) {
      for (int64_t a = th.ndim() - 1; a >= 0; --a) {
        if (++ct[a] < th[a]) break;
        ct[a] = 0;
      }
    }
    const int64_t receiver = tp.ranks()[ti];
    bool zeros = false;
    for (int64_t a = 0; a < target.size(); ++a) {
      bool kept = same && source[a].is_partial_sum();
      if (target[a].is_partial_sum() && !kept && ct[a] != 0) zeros = true;
    }
    if (zeros) continue;
    // SliceOf without its checks and allocations.
    bool empty = false;
    for (int64_t d = 0; d < logical.shape.ndim(); ++d) {
      need.offset[d] = 0;
      need.shape[d] = logical.shape[d];
    }
    for (int64_t a = 0; a < th.ndim(); ++a) {
      if (!target[a].is_split()) continue;
      const int64_t d = target[a].axis();
      Range r = BalancedPart(need.shape[d], th[a], ct[a]);
      need.offset[d] += r.begin;
      need.shape[d] = r.size;
    }
    for (int64_t d = 0; d < logical.shape.ndim(); ++d) empty = empty || need.shape[d] == 0;
    if (empty) continue;
    Class& c = class_for(ct);
    // The boxes that meet `need`: per tensor axis the run of cuts meeting
    // its range and each cut's overlap with it, then every cell of their
    // product (its elements: the product of the overlaps).
    bool none = false;
    int64_t cell = 0;
    for (int64_t d = 0; d < ndim && !none; ++d) {
      const auto& cuts = c.cuts[d];
      const int64_t begin = need.offset[d], end = begin + need.shape[d];
      std::tie(lo[d], hi[d]) = CutsMeeting(cuts, begin, end);
      none = lo[d] >= hi[d];
      at[d] = lo[d];
      cell += lo[d] * c.strides[d];
      overlap[d].clear();
      for (int64_t i = lo[d]; i < hi[d]; ++i) {
        const int64_t b = std::max(begin, cuts[i].first);
        const int64_t e = std::min(end, cuts[i].first + cuts[i].second);
        overlap[d].push_back(std::max<int64_t>(0, e - b));
      }
    }
    meeting.clear();
    while (!none) {
      int64_t elements = 1;  // at most need's elements: no overflow
      for (int64_t d = 0; d < ndim; ++d) elements *= overlap[d][at[d] - lo[d]];
      const int64_t h = c.grid[cell];
      if (elements > 0 && h >= 0) {
        if (transfers != nullptr) {
          meeting.push_back(static_cast<size_t>(h));
        } else {
          send(c, static_cast<size_t>(h), receiver, SaturatingMul(elements, element_size));
        }
      }
      none = !NextCell(at, lo, hi, c.strides, &cell);
    }
    if (transfers == nullptr) continue;
    // Source order, for the transfers' order; the bytes do not depend on
    // it (boxes have disjoint holders).
    std::sort(meeting.begin(), meeting.end());
    for (size_t h : meeting) {
      const Box& box = c.holders[h].first;
      const int64_t sender =
          send(c, h, receiver, SaturatingMul(OverlapElements(need, box), element_size));
      Box piece = Intersect(need, box);
      transfers->push_back({sender, receiver, piece.offset, piece.shape});
    }
  }
  return sent;
}

BoxingStep SendRecvStep(const TensorDesc& logical, const Placement& sp, const NdSbp& source,
                        const Placement& tp, const NdSbp& target, bool with_transfers) {
  BoxingStep step;
  step.kind = Conf::SEND_RECV;
  step.from_placement = sp;
  step.from = source;
  step.to_placement = tp;
  step.to = target;
  const std::vector<int64_t> sent =
      SendRecvBytes(logical, sp, source, tp, target, with_transfers ? &step.transfers : nullptr);
  for (int64_t r : sp.ranks()) step.bytes_sent[r] = sent[r];
  for (int64_t r : tp.ranks()) step.bytes_sent[r] = sent[r];
  return step;
}

std::vector<std::vector<int64_t>> SoundOrders(const NdSbp& from, const NdSbp& to) {
  std::vector<int64_t> changed;
  for (int64_t a = 0; a < from.size(); ++a) {
    if (from[a] != to[a]) changed.push_back(a);
  }
  std::vector<std::vector<int64_t>> orders;
  do {
    NdSbp cur = from;
    bool sound = true;
    for (int64_t a : changed) {
      if (!StepSound(cur, a, to[a])) {
        sound = false;
        break;
      }
      cur = With(cur, a, to[a]);
    }
    if (sound) orders.push_back(changed);
  } while (std::next_permutation(changed.begin(), changed.end()));
  return orders;
}

bool DirectCompetes(const NdSbp& from, const NdSbp& to) {
  int64_t changed = 0;
  for (int64_t a = 0; a < from.size(); ++a) {
    if (from[a].is_partial_sum() || to[a].is_partial_sum()) return false;
    changed += from[a] != to[a];
  }
  return changed >= 2;
}

std::vector<std::pair<int64_t, Sbp>> ReductionSteps(const Shape& logical, const NdSbp& from,
                                                    const NdSbp* target) {
  std::vector<std::pair<int64_t, Sbp>> steps;
  NdSbp cur = from;
  for (int64_t a = 0; a < cur.size(); ++a) {
    if (!cur[a].is_partial_sum()) continue;
    if (target != nullptr && (*target)[a].is_partial_sum()) continue;
    Sbp y = ReductionTarget(logical, cur, a, target ? &(*target)[a] : nullptr);
    steps.emplace_back(a, y);
    cur = With(cur, a, y);
  }
  return steps;
}

Status CheckBoxing(const TensorDesc& logical, const Placement& from_placement, const NdSbp& from,
                   const Placement& to_placement, const NdSbp& to, const std::string& name) {
  const std::string what = StrCat("boxing of '", name, "' ", logical.shape);
  OFL_ENSURE(from_placement.size() > 0 && to_placement.size() > 0, what,
             ": a placement is empty (source ", from_placement.ToString(), ", target ",
             to_placement.ToString(), ")");
  OFL_ENSURE(from_placement.device_type() == to_placement.device_type(), what,
             ": device types differ: source ", from_placement.ToString(), ", target ",
             to_placement.ToString());
  // The messages name the placements; built only on failure (a 1,024-rank
  // placement prints long).
  if (!ValidateNdSbp(logical.shape, from_placement.hierarchy(), from, what).ok()) {
    OFL_RETURN_IF_ERROR(ValidateNdSbp(logical.shape, from_placement.hierarchy(), from,
                                      what + ": source on " + from_placement.ToString()));
  }
  if (!ValidateNdSbp(logical.shape, to_placement.hierarchy(), to, what).ok()) {
    OFL_RETURN_IF_ERROR(ValidateNdSbp(logical.shape, to_placement.hierarchy(), to,
                                      what + ": target on " + to_placement.ToString()));
  }
  return Status::OK();
}

}  // namespace ofl::boxing_internal
