// The SEND_RECV step priced per cell of the source and target grids
// (graph/boxing_rules.h SendRecvByCells).
#include <algorithm>
#include <memory>
#include <optional>
#include <tuple>
#include <utility>
#include <vector>

#include "graph/boxing_rules.h"
#include "oneflow_lite/core/checked_math.h"
#include "oneflow_lite/core/slicing.h"

namespace ofl::boxing_internal {

namespace {

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
  g.cut_index.resize(g.cells * ndim);
  for (int64_t cell = 0; cell < g.cells; ++cell) {
    for (int64_t d = 0; d < ndim; ++d) {
      g.cut_index[cell * ndim + d] = (cell / g.strides[d]) % static_cast<int64_t>(g.cuts[d].size());
    }
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

// GridOf(...), from `memo` when it has it (and kept there).
std::shared_ptr<const Grid> SharedGrid(const Shape& logical, const Placement& p,
                                       const NdSbp& nd_sbp, SendRecvMemo* memo) {
  if (memo == nullptr) return std::make_shared<const Grid>(GridOf(logical, p, nd_sbp));
  SendRecvMemo::GridKey key{logical.dims(), p.hierarchy().dims(), nd_sbp};
  auto it = memo->grids.find(key);
  if (it == memo->grids.end()) {
    it = memo->grids
             .emplace(std::move(key), std::make_shared<const Grid>(GridOf(logical, p, nd_sbp)))
             .first;
  }
  return it->second;
}

// The pricer of one SEND_RECV step: the two grids, holders per box,
// receivers per target cell, the (box, target cell) of every holder that
// receives, and per tensor axis and source cut the target cuts it meets.
class CellPricer {
 public:
  CellPricer(const TensorDesc& logical, const Placement& sp, const NdSbp& source,
             const Placement& tp, const NdSbp& target, SendRecvMemo* memo);

  // (busiest, total), or empty when a box with several holders gets
  // requests of different sizes (then the order of the receivers matters).
  std::optional<std::pair<int64_t, int64_t>> Price() const;

 private:
  void CountReceivers(const Placement& sp, const Placement& tp, const NdSbp& target);
  void SortOwn();  // own_ in ascending order
  void AxisMeets();
  int64_t Cut(const Grid& g, int64_t cell, int64_t d, bool begin) const {
    const auto& cut = g.cuts[d][g.cut_index[cell * ndim_ + d]];
    return begin ? cut.first : cut.second;
  }
  std::pair<std::vector<std::pair<int64_t, int64_t>>::const_iterator,
            std::vector<std::pair<int64_t, int64_t>>::const_iterator>
  OwnOf(int64_t b) const;
  int64_t Elements(int64_t b, int64_t t) const;  // of box b in target cell t
  // Box b's bytes over all its requests and its busiest holder's; false
  // when not exact (Formula) or not order-free (Walk).
  bool Formula(int64_t b, int64_t* load, int64_t* busiest) const;
  bool Walk(int64_t b, int64_t* load, int64_t* busiest) const;

  int64_t ndim_;
  int64_t element_size_;
  std::shared_ptr<const Grid> src_grid_, dst_grid_;
  const Grid& src_;
  const Grid& dst_;
  std::vector<int64_t> holders_;                  // per source cell
  std::vector<int64_t> receivers_;                // per target cell
  std::vector<std::pair<int64_t, int64_t>> own_;  // (source cell, target cell), sorted
  // Per tensor axis and source cut: the target cuts it meets with a
  // positive overlap, and that overlap when it is the same for all (-1 when
  // not).
  std::vector<std::vector<int64_t>> meets_, uniform_;
  int64_t replicas_ = -1;  // receivers of every non-empty target cell; -1 when they differ
};

// P target axes: only coordinate 0 receives (no kept P here), as a B axis.
NdSbp TargetSplits(const NdSbp& target) {
  NdSbp splits = target;
  for (int64_t a = 0; a < target.size(); ++a) {
    if (target[a].is_partial_sum()) splits = With(splits, a, Sbp::Broadcast());
  }
  return splits;
}

CellPricer::CellPricer(const TensorDesc& logical, const Placement& sp, const NdSbp& source,
                       const Placement& tp, const NdSbp& target, SendRecvMemo* memo)
    : ndim_(logical.shape.ndim()),
      element_size_(SizeOf(logical.dtype)),
      src_grid_(SharedGrid(logical.shape, sp, source, memo)),
      dst_grid_(SharedGrid(logical.shape, tp, TargetSplits(target), memo)),
      src_(*src_grid_),
      dst_(*dst_grid_) {
  CountReceivers(sp, tp, target);
  AxisMeets();
  // Receivers per target cell of positive size (the others get nothing) are
  // usually one number, the replicas: then a box's requests are that many
  // per cell it meets, less its own holders'.
  bool same = true;
  int64_t replicas = -1;
  for (int64_t t = 0; t < dst_.cells && same; ++t) {
    bool empty = false;
    for (int64_t d = 0; d < ndim_; ++d) empty = empty || Cut(dst_, t, d, false) == 0;
    if (empty) continue;
    same = replicas < 0 || receivers_[t] == replicas;
    replicas = receivers_[t];
  }
  replicas_ = same ? replicas : -1;
}

void CellPricer::CountReceivers(const Placement& sp, const Placement& tp, const NdSbp& target) {
  int64_t max_rank = 0;
  for (int64_t r : sp.ranks()) max_rank = std::max(max_rank, r);
  for (int64_t r : tp.ranks()) max_rank = std::max(max_rank, r);
  std::vector<int64_t> src_cell_of_rank(max_rank + 1, -1);
  holders_.assign(src_.cells, 0);
  for (int64_t i = 0; i < sp.size(); ++i) {
    src_cell_of_rank[sp.ranks()[i]] = src_.cell_of[i];
    ++holders_[src_.cell_of[i]];
  }
  receivers_.assign(dst_.cells, 0);
  const Shape& th = tp.hierarchy();
  std::vector<int64_t> ct(th.ndim(), 0);  // row-major odometer
  for (int64_t i = 0; i < tp.size(); ++i) {
    bool zeros = false;
    for (int64_t a = 0; a < target.size(); ++a) {
      zeros = zeros || (target[a].is_partial_sum() && ct[a] != 0);
    }
    for (int64_t a = th.ndim() - 1; a >= 0; --a) {
      if (++ct[a] < th[a]) break;
      ct[a] = 0;
    }
    if (zeros) continue;
    const int64_t cell = dst_.cell_of[i];
    ++receivers_[cell];
    const int64_t held = src_cell_of_rank[tp.ranks()[i]];
    if (held >= 0) own_.emplace_back(held, cell);
  }
  SortOwn();
}

void CellPricer::SortOwn() {
  // Counting sort by source cell, then each cell's few pairs by target cell:
  // the order std::sort gives (up to a placement's size pairs per step;
  // sorting them whole was a fifth of a cost-model build on 4,096 devices).
  std::vector<int64_t> start(src_.cells + 1, 0);
  for (const auto& pair : own_) ++start[pair.first + 1];
  for (int64_t b = 0; b < src_.cells; ++b) start[b + 1] += start[b];
  std::vector<std::pair<int64_t, int64_t>> sorted(own_.size());
  std::vector<int64_t> next(start.begin(), start.end() - 1);
  for (const auto& pair : own_) sorted[next[pair.first]++] = pair;
  for (int64_t b = 0; b < src_.cells; ++b) {
    if (start[b + 1] - start[b] > 1) {
      std::sort(sorted.begin() + start[b], sorted.begin() + start[b + 1]);
    }
  }
  own_ = std::move(sorted);
}

void CellPricer::AxisMeets() {
  meets_.assign(ndim_, {});
  uniform_.assign(ndim_, {});
  for (int64_t d = 0; d < ndim_; ++d) {
    const auto& cuts = dst_.cuts[d];
    for (const auto& cut : src_.cuts[d]) {
      const int64_t begin = cut.first, size = cut.second;
      int64_t n = 0, u = 0;
      auto first = std::partition_point(cuts.begin(), cuts.end(),
                                        [&](const auto& x) { return x.first + x.second <= begin; });
      // The cuts meeting [begin, begin + size): a chain over all source cuts,
      // so cheap in total.
      for (auto it = first; it != cuts.end() && it->first < begin + size; ++it) {
        const int64_t x = std::max(begin, it->first);
        const int64_t y = std::min(begin + size, it->first + it->second);
        if (y <= x) continue;
        u = (n == 0 || u == y - x) ? y - x : -1;
        ++n;
      }
      meets_[d].push_back(n);
      uniform_[d].push_back(u);
    }
  }
}

std::pair<std::vector<std::pair<int64_t, int64_t>>::const_iterator,
          std::vector<std::pair<int64_t, int64_t>>::const_iterator>
CellPricer::OwnOf(int64_t b) const {
  auto lo = std::lower_bound(own_.begin(), own_.end(), std::make_pair(b, int64_t{-1}));
  auto hi = std::lower_bound(lo, own_.end(), std::make_pair(b + 1, int64_t{-1}));
  return {lo, hi};
}

int64_t CellPricer::Elements(int64_t b, int64_t t) const {
  int64_t n = 1;
  for (int64_t d = 0; d < ndim_; ++d) {
    const int64_t sb = Cut(src_, b, d, true), se = sb + Cut(src_, b, d, false);
    const int64_t tb = Cut(dst_, t, d, true), te = tb + Cut(dst_, t, d, false);
    n *= std::max<int64_t>(0, std::min(se, te) - std::max(sb, tb));
  }
  return n;
}

bool CellPricer::Formula(int64_t b, int64_t* load, int64_t* busiest) const {
  if (replicas_ < 0) return false;
  int64_t elements = 1, cells = 1,
          size = 1;  // size: -1 when requests differ in size
  for (int64_t d = 0; d < ndim_; ++d) {
    const int64_t i = src_.cut_index[b * ndim_ + d];
    elements *= src_.cuts[d][i].second;
    cells *= meets_[d][i];
    size = (size < 0 || uniform_[d][i] < 0) ? -1 : size * uniform_[d][i];
  }
  int64_t own_requests = 0,
          own_sum = 0;  // a holder's own slice comes from itself
  const auto [own_begin, own_end] = OwnOf(b);
  for (auto it = own_begin; it != own_end; ++it) {
    const int64_t e = Elements(b, it->second);
    own_requests += e > 0;
    own_sum += e;
  }
  const int64_t requests = replicas_ * cells - own_requests;
  if (holders_[b] > 1 && size < 0 && requests > 0) return false;
  *load = SaturatingMul(SaturatingMul(replicas_, elements) - own_sum, element_size_);
  *busiest = requests == 0      ? 0
             : holders_[b] == 1 ? *load
                                : SaturatingMul(SaturatingMul(size, element_size_),
                                                (requests + holders_[b] - 1) / holders_[b]);
  return true;
}

bool CellPricer::Walk(int64_t b, int64_t* load, int64_t* busiest) const {
  std::vector<int64_t> lo(ndim_), hi(ndim_), at(ndim_);
  std::vector<std::vector<int64_t>> overlap(ndim_);
  bool none = false;
  int64_t cell = 0;
  for (int64_t d = 0; d < ndim_; ++d) {
    const int64_t begin = Cut(src_, b, d, true), end = begin + Cut(src_, b, d, false);
    const auto& cuts = dst_.cuts[d];
    std::tie(lo[d], hi[d]) = CutsMeeting(cuts, begin, end);
    none = none || lo[d] >= hi[d];
    at[d] = lo[d];
    cell += lo[d] * dst_.strides[d];
    for (int64_t i = lo[d]; i < hi[d]; ++i) {
      overlap[d].push_back(std::max<int64_t>(
          0, std::min(end, cuts[i].first + cuts[i].second) - std::max(begin, cuts[i].first)));
    }
  }
  const auto [own_begin, own_end] = OwnOf(b);
  int64_t requests = 0, size = -1;  // several holders: m requests of `size`
  *load = 0;
  while (!none) {
    int64_t elements = 1;
    for (int64_t d = 0; d < ndim_; ++d) elements *= overlap[d][at[d] - lo[d]];
    const auto mine = std::equal_range(own_begin, own_end, std::make_pair(b, cell));
    const int64_t m = elements > 0 ? receivers_[cell] - (mine.second - mine.first) : 0;
    if (m > 0) {
      const int64_t bytes = SaturatingMul(elements, element_size_);
      if (holders_[b] > 1 && size >= 0 && size != bytes) return false;
      size = bytes;
      requests += m;
      *load = SaturatingAdd(*load, SaturatingMul(bytes, m));
    }
    none = !NextCell(at, lo, hi, dst_.strides, &cell);
  }
  *busiest = requests == 0      ? 0
             : holders_[b] == 1 ? *load
                                : SaturatingMul(size, (requests + holders_[b] - 1) / holders_[b]);
  return true;
}

std::optional<std::pair<int64_t, int64_t>> CellPricer::Price() const {
  int64_t max = 0, total = 0;
  for (int64_t b = 0; b < src_.cells; ++b) {
    int64_t load = 0, busiest = 0;
    if (!Formula(b, &load, &busiest) && !Walk(b, &load, &busiest)) return std::nullopt;
    total = SaturatingAdd(total, load);
    max = std::max(max, busiest);
  }
  return std::make_pair(max, total);
}

}  // namespace

std::optional<std::pair<int64_t, int64_t>> SendRecvByCells(const TensorDesc& logical,
                                                           const Placement& sp, const NdSbp& source,
                                                           const Placement& tp, const NdSbp& target,
                                                           SendRecvMemo* memo) {
  for (int64_t a = 0; a < source.size(); ++a) {
    if (source[a].is_partial_sum()) return std::nullopt;
  }
  return CellPricer(logical, sp, source, tp, target, memo).Price();
}

}  // namespace ofl::boxing_internal
