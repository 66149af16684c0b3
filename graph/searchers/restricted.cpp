// Restricted cost graphs (restricted.h).
#include "graph/searchers/restricted.h"

#include <algorithm>
#include <numeric>
#include <tuple>

namespace ofl {

Maybe<Restricted> Restrict(const CostGraph& graph, const std::vector<std::vector<int>>& allowed) {
  Restricted out;
  const bool all = std::all_of(allowed.begin(), allowed.end(),
                               [](const std::vector<int>& a) { return a.empty(); });
  if (all) {
    out.given = &graph;
    out.kept.resize(graph.num_nodes());
    for (int u = 0; u < graph.num_nodes(); ++u) {
      out.kept[u].resize(graph.num_candidates(u));
      std::iota(out.kept[u].begin(), out.kept[u].end(), 0);
    }
    return out;
  }
  out.owned = std::make_unique<CostGraph>();
  CostGraph& restricted = *out.owned;
  for (int u = 0; u < graph.num_nodes(); ++u) {
    std::vector<int> kept = allowed[u];
    if (kept.empty()) {
      kept.resize(graph.num_candidates(u));
      for (int c = 0; c < graph.num_candidates(u); ++c) kept[c] = c;
    }
    std::vector<Candidate> candidates;
    for (int c : kept) candidates.push_back(graph.node(u).candidates[c]);
    OFL_RETURN_IF_ERROR(restricted.AddNode(graph.node(u).name, std::move(candidates)).status());
    out.kept.push_back(std::move(kept));
  }
  std::map<std::tuple<const EdgeMatrix*, const std::vector<int>*, const std::vector<int>*>,
           EdgeMatrixPtr>
      cut;
  for (int e = 0; e < graph.num_edges(); ++e) {
    const CostEdge& edge = graph.edge(e);
    EdgeMatrixPtr m = edge.matrix;
    if (!allowed[edge.from].empty() || !allowed[edge.to].empty()) {
      const std::vector<int>& rows = out.kept[edge.from];
      const std::vector<int>& cols = out.kept[edge.to];
      auto key = std::make_tuple(m.get(), &allowed[edge.from], &allowed[edge.to]);
      auto it = cut.find(key);
      if (it == cut.end()) {
        std::vector<double> seconds;
        for (int r : rows) {
          for (int c : cols) seconds.push_back(m->at(r, c));
        }
        OFL_ASSIGN_OR_RETURN(EdgeMatrixPtr sub,
                             EdgeMatrix::Create(static_cast<int>(rows.size()),
                                                static_cast<int>(cols.size()), std::move(seconds)));
        it = cut.emplace(key, sub).first;
      }
      m = it->second;
    }
    OFL_RETURN_IF_ERROR(restricted.AddEdge(edge.from, edge.to, m).status());
  }
  OFL_RETURN_IF_ERROR(restricted.SetMemoryLimit(graph.memory_limit()));
  return out;
}

Maybe<Restricted> RestrictToPins(const SearchInput& input, std::map<std::string, NdSbp> fixed) {
  for (const auto& [name, sbp] : input.options.pinned) fixed[name] = sbp;
  OFL_ASSIGN_OR_RETURN(auto allowed, AllowedCandidates(input.graph, input.model, fixed));
  OFL_ASSIGN_OR_RETURN(Restricted r, Restrict(input.model.graph(), allowed));
  if (r.graph().SmallestMemoryNeed() > r.graph().memory_limit()) {
    return InvalidArgument("plan ", input.options.searcher,
                           ": no strategy with these sources fits "
                           "device memory: it needs at least ",
                           FormatBytes(r.graph().SmallestMemoryNeed()),
                           " per device, above the "
                           "limit of ",
                           FormatBytes(r.graph().memory_limit()));
  }
  return r;
}

std::vector<int> ToOriginal(const Restricted& r, const std::vector<int>& choice) {
  std::vector<int> out(choice.size());
  for (size_t u = 0; u < choice.size(); ++u) out[u] = r.kept[u][choice[u]];
  return out;
}

std::vector<int> ToRestricted(const Restricted& r, const std::vector<int>& choice) {
  std::vector<int> out(choice.size());
  for (size_t u = 0; u < choice.size(); ++u) {
    auto it = std::find(r.kept[u].begin(), r.kept[u].end(), choice[u]);
    if (it == r.kept[u].end()) return {};
    out[u] = static_cast<int>(it - r.kept[u].begin());
  }
  return out;
}

}  // namespace ofl
