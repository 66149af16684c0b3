// Axis descent: one mesh axis re-chosen exactly over the whole graph.
#include "search/axis_descent.h"

#include <algorithm>
#include <utility>

#include "search/elimination.h"

namespace ofl {

AxisLabels AxisLabels::Restricted(const std::vector<std::vector<int>>& kept) const {
  AxisLabels out;
  out.axes = axes;
  if (of.empty()) return out;
  out.of.resize(kept.size());
  for (size_t u = 0; u < kept.size(); ++u) {
    out.of[u].reserve(kept[u].size() * axes);
    for (int c : kept[u]) {
      for (int a = 0; a < axes; ++a) out.of[u].push_back(of[u][static_cast<size_t>(c) * axes + a]);
    }
  }
  return out;
}

bool AxisLabels::usable(const CostGraph& graph) const {
  if (axes < 2 || of.size() != static_cast<size_t>(graph.num_nodes())) return false;
  for (int u = 0; u < graph.num_nodes(); ++u) {
    if (of[u].size() != static_cast<size_t>(graph.num_candidates(u)) * axes) return false;
  }
  return true;
}

struct AxisDescent::Restricted {
  std::vector<std::vector<int>> kept;
  CostGraph graph;
  std::unique_ptr<EliminationPlan> plan;
};

AxisDescent::AxisDescent(const CostGraph& graph, AxisLabels labels, int64_t max_entries,
                         int lagrangian_iterations, bool free_nodes)
    : graph_(graph),
      labels_(std::move(labels)),
      max_entries_(max_entries),
      lagrangian_iterations_(lagrangian_iterations),
      free_nodes_(free_nodes),
      idle_at_(labels_.axes) {
  CHECK(labels_.usable(graph_)) << "axis labels do not match the graph";
  const int n = graph_.num_nodes();
  rank_.assign(n, n);
  if (!free_nodes_) return;
  for (int u = 0; u < n; ++u) {
    if (graph_.num_candidates(u) > 1) order_.push_back(u);
  }
  std::stable_sort(order_.begin(), order_.end(), [&](int x, int y) {
    return graph_.num_candidates(x) < graph_.num_candidates(y);
  });
  for (size_t i = 0; i < order_.size(); ++i) {
    rank_[order_[i]] = static_cast<int>(i);
    const bool last = i + 1 == order_.size() ||
                      graph_.num_candidates(order_[i + 1]) > graph_.num_candidates(order_[i]);
    if (last) levels_.push_back(static_cast<int>(i) + 1);
  }
}

bool AxisDescent::Move(int a, std::vector<int>& choice) {
  if (idle_at_[a] == choice) return false;  // it stayed from this very choice before
  const bool moved = Solve(a, choice);
  if (!moved) idle_at_[a] = choice;
  return moved;
}

std::vector<std::vector<int>> AxisDescent::Kept(int a, const std::vector<int>& choice,
                                                int freed) const {
  const int n = graph_.num_nodes(), axes = labels_.axes;
  std::vector<std::vector<int>> kept(n);
  for (int u = 0; u < n; ++u) {
    const int k = graph_.num_candidates(u);
    const bool free = rank_[u] < freed;
    kept[u].reserve(free ? k : 8);
    const int* mine = labels_.of[u].data() + static_cast<size_t>(choice[u]) * axes;
    for (int c = 0; c < k; ++c) {
      const int* theirs = labels_.of[u].data() + static_cast<size_t>(c) * axes;
      bool same = true;
      for (int b = 0; b < axes && same && !free; ++b) same = b == a || theirs[b] == mine[b];
      if (same) kept[u].push_back(c);
    }
  }
  return kept;
}

std::vector<int> AxisDescent::KeptSizes(int a, const std::vector<int>& choice, int freed) const {
  const int n = graph_.num_nodes(), axes = labels_.axes;
  std::vector<int> sizes(n);
  for (int u = 0; u < n; ++u) {
    const int k = graph_.num_candidates(u);
    if (rank_[u] < freed) {
      sizes[u] = k;
      continue;
    }
    const int* mine = labels_.of[u].data() + static_cast<size_t>(choice[u]) * axes;
    int count = 0;
    for (int c = 0; c < k; ++c) {
      const int* theirs = labels_.of[u].data() + static_cast<size_t>(c) * axes;
      bool same = true;
      for (int b = 0; b < axes && same; ++b) same = b == a || theirs[b] == mine[b];
      count += same ? 1 : 0;
    }
    sizes[u] = count;
  }
  return sizes;
}

std::unique_ptr<AxisDescent::Restricted> AxisDescent::Restrict(std::vector<std::vector<int>> kept) {
  auto out = std::make_unique<Restricted>();
  out->kept = std::move(kept);
  const std::vector<std::vector<int>>& k = out->kept;
  CostGraph& sub = out->graph;
  for (int u = 0; u < graph_.num_nodes(); ++u) {
    std::vector<Candidate> candidates;
    candidates.reserve(k[u].size());
    for (int c : k[u]) candidates.push_back(graph_.node(u).candidates[c]);
    CHECK(sub.AddNode("", std::move(candidates)).ok());
  }
  for (int e = 0; e < graph_.num_edges(); ++e) {
    const CostEdge& edge = graph_.edge(e);
    const std::vector<int>&rows = k[edge.from], &cols = k[edge.to];
    if (static_cast<int>(rows.size()) == edge.matrix->rows() &&
        static_cast<int>(cols.size()) == edge.matrix->cols()) {
      CHECK(sub.AddEdge(edge.from, edge.to, edge.matrix).ok());  // both ends free
      continue;
    }
    auto key = std::make_tuple(edge.matrix.get(), rows, cols);
    auto it = cut_.find(key);
    if (it == cut_.end()) {
      std::vector<double> seconds;
      seconds.reserve(rows.size() * cols.size());
      for (int r : rows) {
        for (int c : cols) seconds.push_back(edge.matrix->at(r, c));
      }
      Maybe<EdgeMatrixPtr> m = EdgeMatrix::Create(
          static_cast<int>(rows.size()), static_cast<int>(cols.size()), std::move(seconds));
      CHECK(m.ok()) << m.status().message();
      it = cut_.emplace(std::move(key), std::move(m).value()).first;
    }
    CHECK(sub.AddEdge(edge.from, edge.to, it->second).ok());
  }
  CHECK(sub.SetMemoryLimit(graph_.memory_limit()).ok());
  Maybe<EliminationPlan> made = EliminationPlan::Make(sub, {}, max_entries_, max_entries_);
  if (!made.ok()) return nullptr;  // too wide
  out->plan = std::make_unique<EliminationPlan>(std::move(made).value());
  return out;
}

std::unique_ptr<AxisDescent::Restricted> AxisDescent::Widest(int a, const std::vector<int>& choice,
                                                             std::vector<std::vector<int>> plain) {
  // Bisection over the levels (how many nodes a cutoff at each distinct count
  // frees): level lo fits (-1: none freed), level hi does not (size: unknown).
  // Each probe only counts the kept candidates and simulates the
  // elimination order (EliminationPlan::Fits, the test Restrict's plan
  // applies); the graph and its plan are built once, for the answer.
  int lo = -1, hi = static_cast<int>(levels_.size());
  while (hi - lo > 1) {
    const int mid = lo + (hi - lo) / 2;
    if (EliminationPlan::Fits(graph_, KeptSizes(a, choice, levels_[mid]), max_entries_,
                              max_entries_)) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  const int freed = lo < 0 ? 0 : levels_[lo];
  free_cutoff_ = freed == 0 ? 0 : graph_.num_candidates(order_[freed - 1]);
  return Restrict(lo < 0 ? std::move(plain) : Kept(a, choice, freed));
}

bool AxisDescent::Solve(int a, std::vector<int>& choice) {
  const int n = graph_.num_nodes();
  bool any_choice = false;
  std::vector<std::vector<int>> plain = Kept(a, choice, 0);
  for (int u = 0; u < n && !any_choice; ++u) any_choice = plain[u].size() > 1;
  if (!any_choice && !free_nodes_) return false;
  std::unique_ptr<Restricted> r = Widest(a, choice, std::move(plain));
  if (r == nullptr) return false;  // too wide with this axis free
  const CostGraph& sub = r->graph;
  const std::vector<std::vector<int>>& kept = r->kept;
  std::vector<int> current(n);
  for (int u = 0; u < n; ++u) {
    current[u] =
        static_cast<int>(std::find(kept[u].begin(), kept[u].end(), choice[u]) - kept[u].begin());
  }
  entries_ += r->plan->total_entries();
  std::vector<int> best = LagrangianSolve(sub, *r->plan, lagrangian_iterations_, &workspace_);
  if (best.empty()) return false;
  const double before = sub.TotalSeconds(current), after = sub.TotalSeconds(best);
  if (!(after < before - 1e-12 * before) || sub.MemoryBytes(best) > sub.memory_limit()) {
    return false;
  }
  for (int u = 0; u < n; ++u) choice[u] = kept[u][best[u]];
  return true;
}

int AxisDescent::Pass(std::vector<int>& choice) {
  int moved = 0;
  for (int a = 0; a < labels_.axes; ++a) moved += Move(a, choice) ? 1 : 0;
  return moved;
}

}  // namespace ofl
