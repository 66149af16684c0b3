// Cutset conditioning: the greedy cutset, then elimination per assignment.
#include "search/cutset.h"

#include <algorithm>
#include <limits>

#include "search/elimination.h"

namespace ofl {

namespace {

// The graph left when every cutset node u takes fixed[u] (-1: not in the
// cutset): the others' candidates with their edges to cutset nodes folded in,
// their edges among themselves, the cutset's own compute and edges as
// `constant`, the memory it takes off the limit as `memory`.
struct Conditioned {
  CostGraph graph;
  double constant = 0;
  int64_t memory = 0;
};

Conditioned Condition(const CostGraph& g, const std::vector<int>& fixed,
                      const std::vector<int>& local) {
  Conditioned out;
  for (int u = 0; u < g.num_nodes(); ++u) {
    if (fixed[u] >= 0) {
      const Candidate& c = g.node(u).candidates[fixed[u]];
      out.constant += c.compute_seconds;
      out.memory += c.memory_bytes;
      for (const Incidence& inc : g.incident(u)) {
        if (inc.outgoing && fixed[inc.neighbour] >= 0) {
          out.constant += g.EdgeSeconds(inc, fixed[u], fixed[inc.neighbour]);
        }
      }
      continue;
    }
    std::vector<Candidate> cands = g.node(u).candidates;
    for (const Incidence& inc : g.incident(u)) {
      if (fixed[inc.neighbour] < 0) continue;
      for (size_t c = 0; c < cands.size(); ++c) {
        cands[c].compute_seconds += g.EdgeSeconds(inc, static_cast<int>(c), fixed[inc.neighbour]);
      }
    }
    CHECK(out.graph.AddNode("", std::move(cands)).ok());
  }
  for (int e = 0; e < g.num_edges(); ++e) {
    const CostEdge& edge = g.edge(e);
    if (fixed[edge.from] >= 0 || fixed[edge.to] >= 0) continue;
    CHECK(out.graph.AddEdge(local[edge.from], local[edge.to], edge.matrix).ok());
  }
  return out;
}

// Greedy: the node with the most distinct neighbours outside the cutset
// (ties: fewer candidates, then the lower index) joins, until the rest
// eliminates within `max_entries`; returns the plan's entries (-1: the cutset
// grew past `max_cutset`).
int64_t ChooseCutset(const CostGraph& g, const CutsetOptions& options, std::vector<int>* cutset) {
  const int n = g.num_nodes();
  std::vector<int> fixed(n, -1), local(n, -1);
  for (;;) {
    int next = 0;
    for (int u = 0; u < n; ++u) local[u] = fixed[u] >= 0 ? -1 : next++;
    Conditioned rest = Condition(g, fixed, local);
    Maybe<EliminationPlan> made =
        EliminationPlan::Make(rest.graph, {}, options.max_entries, options.max_entries);
    if (made.ok()) return made.value().total_entries();
    if (static_cast<int>(cutset->size()) >= options.max_cutset) return -1;
    int best = -1;
    int best_degree = -1;
    std::vector<int> seen(n, -1);
    for (int u = 0; u < n; ++u) {
      if (fixed[u] >= 0) continue;
      int degree = 0;
      for (const Incidence& inc : g.incident(u)) {
        if (fixed[inc.neighbour] >= 0 || seen[inc.neighbour] == u) continue;
        seen[inc.neighbour] = u;
        ++degree;
      }
      if (degree > best_degree ||
          (degree == best_degree && g.num_candidates(u) < g.num_candidates(best))) {
        best = u;
        best_degree = degree;
      }
    }
    if (best < 0) return -1;
    fixed[best] = 0;
    cutset->push_back(best);
  }
}

}  // namespace

CutsetAnswer CutsetSolve(const CostGraph& g, const CutsetOptions& options) {
  CutsetAnswer answer;
  const int64_t entries = ChooseCutset(g, options, &answer.cutset);
  if (entries < 0) return answer;
  int64_t assignments = 1;
  for (int u : answer.cutset) {
    assignments *= g.num_candidates(u);
    if (assignments * std::max<int64_t>(entries, 1) > options.budget) return answer;
  }
  const int n = g.num_nodes();
  std::vector<int> fixed(n, -1), local(n, -1), at(answer.cutset.size(), 0);
  int next = 0;
  for (int u : answer.cutset) fixed[u] = 0;
  for (int u = 0; u < n; ++u) local[u] = fixed[u] >= 0 ? -1 : next++;
  double best = std::numeric_limits<double>::infinity();
  answer.exact = true;
  // Work spent: a plain solve costs the plan's entries; a Lagrangian search
  // up to `lagrangian_iterations` more solves, which the check above could
  // not foresee (memory binds or not per assignment).
  int64_t spent = 0;
  const int64_t per_solve = std::max<int64_t>(entries, 1);
  for (;;) {
    if (spent + per_solve > options.budget) {  // the rest unsolved: not proved
      answer.exact = false;
      break;
    }
    for (size_t i = 0; i < at.size(); ++i) fixed[answer.cutset[i]] = at[i];
    Conditioned rest = Condition(g, fixed, local);
    const int64_t limit = g.memory_limit();
    const bool room =
        limit == kNoMemoryLimit || rest.memory + rest.graph.SmallestMemoryNeed() <= limit;
    if (room) {
      if (limit != kNoMemoryLimit) CHECK(rest.graph.SetMemoryLimit(limit - rest.memory).ok());
      Maybe<EliminationPlan> made =
          EliminationPlan::Make(rest.graph, {}, options.max_entries, options.max_entries);
      CHECK(made.ok()) << "the cutset's structure is the same for every assignment";
      std::vector<int> low = made.value().Solve(0, nullptr);
      spent += per_solve;
      if (rest.graph.MemoryBytes(low) > rest.graph.memory_limit()) {
        answer.exact = false;
        low = LagrangianSolve(rest.graph, made.value(), options.lagrangian_iterations);
        spent += per_solve * options.lagrangian_iterations;
      }
      ++answer.assignments;
      if (!low.empty()) {
        const double total = rest.constant + rest.graph.TotalSeconds(low);
        if (total < best) {
          best = total;
          answer.choice.assign(n, 0);
          for (int u = 0; u < n; ++u) answer.choice[u] = fixed[u] >= 0 ? fixed[u] : low[local[u]];
        }
      }
    }
    size_t i = at.size();
    while (i > 0 && ++at[i - 1] == g.num_candidates(answer.cutset[i - 1])) at[--i] = 0;
    if (i == 0) break;
  }
  return answer;
}

}  // namespace ofl
