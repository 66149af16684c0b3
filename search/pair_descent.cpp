// Pair descent: the joint re-choice of an edge's two ends.
#include "search/pair_descent.h"

#include <algorithm>
#include <limits>

namespace ofl {

PairDescent::PairDescent(const CostGraph& graph) : graph_(graph) {
  for (int e = 0; e < graph.num_edges(); ++e) {
    int a = graph.edge(e).from, b = graph.edge(e).to;
    pairs_.emplace_back(std::min(a, b), std::max(a, b));
  }
  std::sort(pairs_.begin(), pairs_.end());
  pairs_.erase(std::unique(pairs_.begin(), pairs_.end()), pairs_.end());
  Reset();
}

void PairDescent::Reset() {
  checked_.assign(pairs_.size(), -1);
  touched_.assign(graph_.num_nodes(), 0);
  clock_ = 0;
}

int PairDescent::Pass(std::vector<int>& choice) {
  int64_t used = graph_.MemoryBytes(choice);
  const int64_t limit = graph_.memory_limit();
  auto memory = [&](int u, int c) { return graph_.node(u).candidates[c].memory_bytes; };
  // Compute plus the edges to every node but `other`, per candidate of u.
  auto local = [&](int u, int other, std::vector<double>& out) {
    const std::vector<Candidate>& cands = graph_.node(u).candidates;
    out.resize(cands.size());
    for (size_t c = 0; c < cands.size(); ++c) out[c] = cands[c].compute_seconds;
    for (const Incidence& inc : graph_.incident(u)) {
      if (inc.neighbour == other) continue;
      const EdgeMatrix& m = *graph_.edge(inc.edge).matrix;
      int y = choice[inc.neighbour];
      if (inc.outgoing) {
        for (size_t c = 0; c < out.size(); ++c) out[c] += m.at(c, y);
      } else {
        const double* row = m.row(y);
        for (size_t c = 0; c < out.size(); ++c) out[c] += row[c];
      }
    }
  };
  int moved = 0;
  for (size_t p = 0; p < pairs_.size(); ++p) {
    auto [u, v] = pairs_[p];
    if (checked_[p] >= 0 && touched_[u] <= checked_[p] && touched_[v] <= checked_[p]) continue;
    checked_[p] = clock_;
    local(u, v, local_u_);
    local(v, u, local_v_);
    int ku = local_u_.size(), kv = local_v_.size();
    int64_t room = limit - (used - memory(u, choice[u]) - memory(v, choice[v]));
    between_.clear();
    for (const Incidence& inc : graph_.incident(u)) {
      if (inc.neighbour == v)
        between_.push_back({graph_.edge(inc.edge).matrix.get(), inc.outgoing});
    }
    auto joint = [&](int a, int b) {
      double cost = local_u_[a] + local_v_[b];
      for (const auto& [m, outgoing] : between_) cost += outgoing ? m->at(a, b) : m->at(b, a);
      return cost;
    };
    const double current = joint(choice[u], choice[v]);
    double best = current;
    int best_a = choice[u], best_b = choice[v];
    for (int a = 0; a < ku; ++a) {
      if (local_u_[a] >= best) continue;  // edges are >= 0: no b can win
      for (int b = 0; b < kv; ++b) {
        if (local_u_[a] + local_v_[b] >= best || memory(u, a) + memory(v, b) > room) continue;
        double cost = joint(a, b);
        if (cost < best) {
          best = cost;
          best_a = a;
          best_b = b;
        }
      }
    }
    if (!(best < current - 1e-12 * current)) continue;
    used += memory(u, best_a) + memory(v, best_b) - memory(u, choice[u]) - memory(v, choice[v]);
    choice[u] = best_a;
    choice[v] = best_b;
    ++moved;
    ++clock_;
    for (int w : {u, v}) {
      touched_[w] = clock_;
      for (const Incidence& inc : graph_.incident(w)) touched_[inc.neighbour] = clock_;
    }
  }
  return moved;
}

}  // namespace ofl
