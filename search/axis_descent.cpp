// Axis descent: one mesh axis re-chosen exactly over the whole graph.
#include "search/axis_descent.h"

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

AxisDescent::AxisDescent(const CostGraph& graph, AxisLabels labels, int64_t max_entries,
                         int lagrangian_iterations)
    : graph_(graph),
      labels_(std::move(labels)),
      max_entries_(max_entries),
      lagrangian_iterations_(lagrangian_iterations),
      idle_at_(labels_.axes) {
  CHECK(labels_.usable(graph_)) << "axis labels do not match the graph";
}

bool AxisDescent::Move(int a, std::vector<int>& choice) {
  if (idle_at_[a] == choice) return false;  // it stayed from this very choice before
  const bool moved = Solve(a, choice);
  if (!moved) idle_at_[a] = choice;
  return moved;
}

bool AxisDescent::Solve(int a, std::vector<int>& choice) {
  const int n = graph_.num_nodes(), axes = labels_.axes;
  // Per node, the candidates that keep every other axis's label.
  std::vector<std::vector<int>> kept(n);
  bool any_choice = false;
  for (int u = 0; u < n; ++u) {
    const int* mine = labels_.of[u].data() + static_cast<size_t>(choice[u]) * axes;
    for (int c = 0; c < graph_.num_candidates(u); ++c) {
      const int* theirs = labels_.of[u].data() + static_cast<size_t>(c) * axes;
      bool same = true;
      for (int b = 0; b < axes && same; ++b) same = b == a || theirs[b] == mine[b];
      if (same) kept[u].push_back(c);
    }
    any_choice = any_choice || kept[u].size() > 1;
  }
  if (!any_choice) return false;
  CostGraph sub;
  std::vector<int> current(n);
  for (int u = 0; u < n; ++u) {
    std::vector<Candidate> candidates;
    candidates.reserve(kept[u].size());
    for (size_t i = 0; i < kept[u].size(); ++i) {
      candidates.push_back(graph_.node(u).candidates[kept[u][i]]);
      if (kept[u][i] == choice[u]) current[u] = static_cast<int>(i);
    }
    CHECK(sub.AddNode("", std::move(candidates)).ok());
  }
  for (int e = 0; e < graph_.num_edges(); ++e) {
    const CostEdge& edge = graph_.edge(e);
    auto key = std::make_tuple(edge.matrix.get(), kept[edge.from], kept[edge.to]);
    auto it = cut_.find(key);
    if (it == cut_.end()) {
      std::vector<double> seconds;
      seconds.reserve(kept[edge.from].size() * kept[edge.to].size());
      for (int r : kept[edge.from]) {
        for (int c : kept[edge.to]) seconds.push_back(edge.matrix->at(r, c));
      }
      Maybe<EdgeMatrixPtr> m =
          EdgeMatrix::Create(static_cast<int>(kept[edge.from].size()),
                             static_cast<int>(kept[edge.to].size()), std::move(seconds));
      CHECK(m.ok()) << m.status().message();
      it = cut_.emplace(std::move(key), std::move(m).value()).first;
    }
    CHECK(sub.AddEdge(edge.from, edge.to, it->second).ok());
  }
  CHECK(sub.SetMemoryLimit(graph_.memory_limit()).ok());
  Maybe<EliminationPlan> made = EliminationPlan::Make(sub, {}, max_entries_, max_entries_);
  if (!made.ok()) return false;  // too wide with this axis free
  entries_ += made.value().total_entries();
  std::vector<int> best = LagrangianSolve(sub, made.value(), lagrangian_iterations_);
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
