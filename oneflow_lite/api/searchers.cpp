// Searchers for the binding (searchers.h).
#include "oneflow_lite/api/searchers.h"

#include <algorithm>
#include <memory>
#include <utility>

#include "graph/searcher.h"

namespace ofl {

namespace {

Maybe<SearchProblem> ProblemOf(const SearchInput& input) {
  const CostModel& model = input.model;
  const CostGraph& graph = model.graph();
  OFL_ASSIGN_OR_RETURN(auto allowed, AllowedCandidates(input.graph, model, input.options.pinned));
  SearchProblem p;
  p.searcher = input.options.searcher;
  p.memory_limit_bytes = graph.memory_limit();
  for (int u = 0; u < graph.num_nodes(); ++u) {
    const CostNodeInfo& info = model.nodes()[u];
    SearchProblem::Node node;
    node.name = info.name;
    node.kind = CostNodeKindName(info.kind);
    for (int c = 0; c < graph.num_candidates(u); ++c) {
      node.layouts.push_back(info.signatures.empty() ? info.sbps[c].ToString()
                                                     : info.signatures[c].ToString());
      node.compute_seconds.push_back(graph.node(u).candidates[c].compute_seconds);
      node.memory_bytes.push_back(graph.node(u).candidates[c].memory_bytes);
    }
    node.allowed = std::move(allowed[u]);
    p.nodes.push_back(std::move(node));
  }
  for (int e = 0; e < graph.num_edges(); ++e) {
    const CostEdge& edge = graph.edge(e);
    SearchProblem::Edge out;
    out.from = edge.from;
    out.to = edge.to;
    out.tensor = model.edges()[e].tensor;
    for (int r = 0; r < edge.matrix->rows(); ++r) {
      out.seconds.emplace_back(edge.matrix->row(r), edge.matrix->row(r) + edge.matrix->cols());
    }
    p.edges.push_back(std::move(out));
  }
  return p;
}

// One candidate per node, each one the pins allow.
Status CheckChoice(const SearchProblem& p, const std::vector<int>& choice) {
  OFL_ENSURE(choice.size() == p.nodes.size(), "searcher '", p.searcher, "' chose ", choice.size(),
             " candidates for ", p.nodes.size(), " cost nodes");
  for (size_t u = 0; u < choice.size(); ++u) {
    const SearchProblem::Node& n = p.nodes[u];
    const int c = choice[u];
    OFL_ENSURE(c >= 0 && c < static_cast<int>(n.layouts.size()), "searcher '", p.searcher,
               "': node ", u, " ('", n.name, "') has no candidate ", c, " (it has ",
               n.layouts.size(), ")");
    OFL_ENSURE(
        n.allowed.empty() || std::find(n.allowed.begin(), n.allowed.end(), c) != n.allowed.end(),
        "searcher '", p.searcher, "': node ", u, " ('", n.name, "') candidate ", c, " ",
        n.layouts[c], " breaks a pin (allowed: ", n.allowed.size(), " candidates)");
  }
  return Status::OK();
}

class FunctionSearcher : public Searcher {
 public:
  FunctionSearcher(std::string name, std::string description, SearchFunction function)
      : Searcher(std::move(name), std::move(description)), function_(std::move(function)) {}

  Maybe<std::vector<int>> Search(const SearchInput& input) const override {
    OFL_ASSIGN_OR_RETURN(SearchProblem problem, ProblemOf(input));
    OFL_ASSIGN_OR_RETURN(std::vector<int> choice, function_(problem));
    OFL_RETURN_IF_ERROR(CheckChoice(problem, choice));
    return choice;
  }

 private:
  SearchFunction function_;
};

}  // namespace

std::vector<SearcherDescription> ListSearchers() {
  std::vector<SearcherDescription> out;
  for (const SearcherInfo& s : SearcherRegistry::List()) out.push_back({s.name, s.description});
  return out;
}

Status RegisterSearchFunction(const std::string& name, const std::string& description,
                              SearchFunction function) {
  OFL_ENSURE(function != nullptr, "register searcher '", name, "': no function");
  return SearcherRegistry::Register(
      std::make_shared<FunctionSearcher>(name, description, std::move(function)));
}

Status UnregisterSearcher(const std::string& name) { return SearcherRegistry::Unregister(name); }

}  // namespace ofl
