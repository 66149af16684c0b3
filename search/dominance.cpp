// Dominance pruning: a worklist of nodes, pairwise checks with early exits,
// then the smaller graph with its matrices cut down (and shared again).
#include "search/dominance.h"

#include <algorithm>
#include <deque>
#include <map>
#include <tuple>

namespace ofl {
namespace {

// Nodes of identical layers ask the same question: the same candidates
// (by value), the same alive subset, the same matrices seen the same way
// with the same alive subsets beyond. Their answers are cached under that
// signature, with candidate lists and alive subsets interned as numbers.
class Pruner {
 public:
  explicit Pruner(const CostGraph& graph)
      : graph_(graph),
        alive_(graph.num_nodes()),
        alive_id_(graph.num_nodes()),
        candidates_id_(graph.num_nodes()) {
    std::map<std::vector<std::pair<double, int64_t>>, int> lists;
    for (int u = 0; u < graph.num_nodes(); ++u) {
      std::vector<std::pair<double, int64_t>> values;
      for (int c = 0; c < graph.num_candidates(u); ++c) {
        alive_[u].push_back(c);
        const Candidate& cand = graph.node(u).candidates[c];
        values.emplace_back(cand.compute_seconds, cand.memory_bytes);
      }
      candidates_id_[u] = lists.emplace(std::move(values), lists.size()).first->second;
      alive_id_[u] = Intern(alive_[u]);
    }
  }

  // Prunes until no node changes; returns the alive candidates per node.
  std::vector<std::vector<int>> Run() {
    std::deque<int> work;
    std::vector<char> queued(graph_.num_nodes(), 1);
    for (int u = 0; u < graph_.num_nodes(); ++u) work.push_back(u);
    while (!work.empty()) {
      int u = work.front();
      work.pop_front();
      queued[u] = 0;
      if (!PruneNode(u)) continue;
      for (const Incidence& inc : graph_.incident(u)) {
        if (!queued[inc.neighbour]) {
          queued[inc.neighbour] = 1;
          work.push_back(inc.neighbour);
        }
      }
    }
    return alive_;
  }

 private:
  using Signature =
      std::pair<std::vector<int64_t>, std::vector<std::tuple<const void*, bool, int>>>;

  int Intern(const std::vector<int>& set) { return sets_.emplace(set, sets_.size()).first->second; }

  // Removes u's candidates dominated by another alive one; true if any went.
  bool PruneNode(int u) {
    Signature key;
    key.first = {candidates_id_[u], alive_id_[u]};
    for (const Incidence& inc : graph_.incident(u)) {
      key.second.emplace_back(graph_.edge(inc.edge).matrix.get(), inc.outgoing,
                              alive_id_[inc.neighbour]);
    }
    std::sort(key.second.begin(), key.second.end());
    auto [slot, fresh] = answers_.try_emplace(std::move(key));
    if (fresh) slot->second = Undominated(u);
    if (slot->second.size() == alive_[u].size()) return false;
    alive_[u] = slot->second;
    alive_id_[u] = Intern(alive_[u]);
    return true;
  }

  // u's alive candidates that no other alive one dominates. Only a b with
  // compute no worse than a's can dominate a: candidates go in compute order.
  std::vector<int> Undominated(int u) const {
    const std::vector<Candidate>& cands = graph_.node(u).candidates;
    std::vector<int> order = alive_[u];
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
      return cands[a].compute_seconds < cands[b].compute_seconds;
    });
    std::vector<int> keep;
    for (size_t i = 0; i < order.size(); ++i) {
      int a = order[i];
      bool dominated = false;
      for (size_t j = 0; j < order.size() && !dominated; ++j) {
        int b = order[j];
        if (cands[b].compute_seconds > cands[a].compute_seconds) break;
        dominated = b != a && Dominates(u, b, a);
      }
      if (!dominated) keep.push_back(a);
    }
    std::sort(keep.begin(), keep.end());
    return keep;
  }

  // b is no worse than a everywhere, and better somewhere or earlier.
  bool Dominates(int u, int b, int a) const {
    const Candidate& cb = graph_.node(u).candidates[b];
    const Candidate& ca = graph_.node(u).candidates[a];
    if (cb.compute_seconds > ca.compute_seconds || cb.memory_bytes > ca.memory_bytes) return false;
    bool strict = cb.compute_seconds < ca.compute_seconds || cb.memory_bytes < ca.memory_bytes;
    for (const Incidence& inc : graph_.incident(u)) {
      const EdgeMatrix& m = *graph_.edge(inc.edge).matrix;
      if (inc.outgoing) {
        const double* rb = m.row(b);
        const double* ra = m.row(a);
        for (int y : alive_[inc.neighbour]) {
          if (rb[y] > ra[y]) return false;
          strict = strict || rb[y] < ra[y];
        }
      } else {
        for (int y : alive_[inc.neighbour]) {
          double xb = m.at(y, b), xa = m.at(y, a);
          if (xb > xa) return false;
          strict = strict || xb < xa;
        }
      }
    }
    return strict || b < a;
  }

  const CostGraph& graph_;
  std::vector<std::vector<int>> alive_;
  std::vector<int> alive_id_;           // interned alive_[u]
  std::vector<int64_t> candidates_id_;  // interned candidate values
  std::map<std::vector<int>, int> sets_;
  std::map<Signature, std::vector<int>> answers_;
};

bool KeepsAll(const std::vector<int>& kept, int count) {
  return static_cast<int>(kept.size()) == count;
}

}  // namespace

std::vector<int> PrunedGraph::ToOriginal(const std::vector<int>& choice) const {
  std::vector<int> original(choice.size());
  for (size_t i = 0; i < choice.size(); ++i) original[i] = kept[i][choice[i]];
  return original;
}

PrunedGraph PruneDominated(const CostGraph& graph) {
  PrunedGraph result;
  result.kept = Pruner(graph).Run();
  for (int u = 0; u < graph.num_nodes(); ++u) {
    std::vector<Candidate> cands;
    for (int c : result.kept[u]) cands.push_back(graph.node(u).candidates[c]);
    result.num_pruned += graph.num_candidates(u) - static_cast<int64_t>(cands.size());
    CHECK(result.graph.AddNode(graph.node(u).name, std::move(cands)).ok());
  }
  // One cut-down matrix per (matrix, kept rows, kept columns).
  using Key = std::tuple<const EdgeMatrix*, std::vector<int>, std::vector<int>>;
  std::map<Key, EdgeMatrixPtr> cut;
  for (int e = 0; e < graph.num_edges(); ++e) {
    const CostEdge& edge = graph.edge(e);
    const std::vector<int>& rows = result.kept[edge.from];
    const std::vector<int>& cols = result.kept[edge.to];
    EdgeMatrixPtr matrix = edge.matrix;
    if (!KeepsAll(rows, matrix->rows()) || !KeepsAll(cols, matrix->cols())) {
      EdgeMatrixPtr& slot = cut[Key(matrix.get(), rows, cols)];
      if (!slot) {
        std::vector<double> data;
        data.reserve(rows.size() * cols.size());
        for (int r : rows) {
          for (int c : cols) data.push_back(matrix->at(r, c));
        }
        slot = EdgeMatrix::Create(rows.size(), cols.size(), std::move(data)).value();
      }
      matrix = slot;
    }
    CHECK(result.graph.AddEdge(edge.from, edge.to, matrix).ok());
  }
  CHECK(result.graph.SetMemoryLimit(graph.memory_limit()).ok());
  return result;
}

PrunedGraph PruneNothing(const CostGraph& graph) {
  PrunedGraph result;
  result.graph = graph;
  for (int u = 0; u < graph.num_nodes(); ++u) {
    result.kept.emplace_back();
    for (int c = 0; c < graph.num_candidates(u); ++c) result.kept[u].push_back(c);
  }
  return result;
}

}  // namespace ofl
