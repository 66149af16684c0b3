// CostGraph: building with checks, evaluation and the cost breakdown.
#include "search/cost_graph.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>

namespace ofl {

Maybe<EdgeMatrixPtr> EdgeMatrix::Create(int rows, int cols, std::vector<double> seconds) {
  OFL_ENSURE(rows >= 1 && cols >= 1, "edge matrix: ", rows, " x ", cols, " must be at least 1 x 1");
  OFL_ENSURE(seconds.size() == static_cast<size_t>(rows) * cols, "edge matrix: ", rows, " x ", cols,
             " needs ", static_cast<int64_t>(rows) * cols, " entries, got ", seconds.size());
  for (size_t i = 0; i < seconds.size(); ++i) {
    OFL_ENSURE(std::isfinite(seconds[i]) && seconds[i] >= 0, "edge matrix: entry (", i / cols, ", ",
               i % cols, ")=", seconds[i], " must be finite and >= 0");
  }
  std::shared_ptr<EdgeMatrix> matrix(new EdgeMatrix());
  matrix->rows_ = rows;
  matrix->cols_ = cols;
  matrix->min_ = *std::min_element(seconds.begin(), seconds.end());
  matrix->max_ = *std::max_element(seconds.begin(), seconds.end());
  matrix->data_ = std::move(seconds);
  return EdgeMatrixPtr(std::move(matrix));
}

Maybe<int> CostGraph::AddNode(std::string name, std::vector<Candidate> candidates) {
  OFL_ENSURE(!candidates.empty(), "cost graph: node '", name, "' has no candidates");
  for (size_t i = 0; i < candidates.size(); ++i) {
    const Candidate& c = candidates[i];
    OFL_ENSURE(std::isfinite(c.compute_seconds) && c.compute_seconds >= 0, "cost graph: node '",
               name, "' candidate ", i, ": compute_seconds=", c.compute_seconds,
               " must be finite and >= 0");
    OFL_ENSURE(c.memory_bytes >= 0, "cost graph: node '", name, "' candidate ", i,
               ": memory_bytes=", c.memory_bytes, " must be >= 0");
  }
  int64_t largest = 0;
  for (const Candidate& c : candidates) largest = std::max(largest, c.memory_bytes);
  OFL_ENSURE(largest <= std::numeric_limits<int64_t>::max() - max_memory_total_,
             "cost graph: node '", name, "' candidate memory of ", largest,
             " bytes would bring the sum of the nodes' largest memory past int64 (",
             max_memory_total_, " bytes before it)");
  max_memory_total_ += largest;
  CostNode node{std::move(name), std::move(candidates), 0};
  node.min_memory_bytes = std::min_element(node.candidates.begin(), node.candidates.end(),
                                           [](const Candidate& a, const Candidate& b) {
                                             return a.memory_bytes < b.memory_bytes;
                                           })
                              ->memory_bytes;
  nodes_.push_back(std::move(node));
  incident_.emplace_back();
  return num_nodes() - 1;
}

Maybe<int> CostGraph::AddEdge(int from, int to, EdgeMatrixPtr matrix) {
  OFL_ENSURE(from >= 0 && from < num_nodes() && to >= 0 && to < num_nodes(), "cost graph: edge ",
             from, " -> ", to, " names a node outside [0, ", num_nodes(), ")");
  const std::string& a = nodes_[from].name;
  const std::string& b = nodes_[to].name;
  OFL_ENSURE(from != to, "cost graph: edge '", a, "' -> '", b, "' is a self loop");
  OFL_ENSURE(matrix != nullptr, "cost graph: edge '", a, "' -> '", b, "' has no matrix");
  OFL_ENSURE(matrix->rows() == num_candidates(from) && matrix->cols() == num_candidates(to),
             "cost graph: edge '", a, "' -> '", b, "': matrix is ", matrix->rows(), " x ",
             matrix->cols(), ", expected ", num_candidates(from), " x ", num_candidates(to),
             " (candidates of '", a, "' x candidates of '", b, "')");
  edges_.push_back(CostEdge{from, to, std::move(matrix)});
  int index = num_edges() - 1;
  incident_[from].push_back(Incidence{index, to, true});
  incident_[to].push_back(Incidence{index, from, false});
  return index;
}

Status CostGraph::SetMemoryLimit(int64_t bytes) {
  OFL_ENSURE(bytes >= 0, "cost graph: memory limit ", bytes, " must be >= 0");
  memory_limit_ = bytes;
  return Status::OK();
}

int64_t CostGraph::num_candidates_total() const {
  int64_t total = 0;
  for (const CostNode& node : nodes_) total += static_cast<int64_t>(node.candidates.size());
  return total;
}

int64_t CostGraph::SmallestMemoryNeed() const {
  int64_t total = 0;
  for (const CostNode& node : nodes_) total += node.min_memory_bytes;
  return total;
}

Status CostGraph::CheckMemoryFeasible() const {
  int64_t need = SmallestMemoryNeed();
  OFL_ENSURE(need <= memory_limit_, "cost graph: no assignment fits the memory limit of ",
             memory_limit_, " bytes (", FormatBytes(memory_limit_),
             ") per device: the smallest per-device memory any assignment needs is ", need,
             " bytes (", FormatBytes(need), "), the sum of each node's smallest candidate");
  return Status::OK();
}

double CostGraph::EdgeSeconds(const Incidence& incidence, int node_choice,
                              int neighbour_choice) const {
  const EdgeMatrix& m = *edges_[incidence.edge].matrix;
  return incidence.outgoing ? m.at(node_choice, neighbour_choice)
                            : m.at(neighbour_choice, node_choice);
}

double CostGraph::LocalSeconds(int node, int candidate, const std::vector<int>& choice) const {
  double total = nodes_[node].candidates[candidate].compute_seconds;
  for (const Incidence& inc : incident_[node]) {
    total += EdgeSeconds(inc, candidate, choice[inc.neighbour]);
  }
  return total;
}

double CostGraph::TotalSeconds(const std::vector<int>& choice) const {
  DCHECK_EQ(choice.size(), nodes_.size());
  double total = 0;
  for (int i = 0; i < num_nodes(); ++i) total += nodes_[i].candidates[choice[i]].compute_seconds;
  for (const CostEdge& e : edges_) total += e.matrix->at(choice[e.from], choice[e.to]);
  return total;
}

int64_t CostGraph::MemoryBytes(const std::vector<int>& choice) const {
  int64_t total = 0;
  for (int i = 0; i < num_nodes(); ++i) total += nodes_[i].candidates[choice[i]].memory_bytes;
  return total;
}

Maybe<Solution> CostGraph::Evaluate(const std::vector<int>& choice) const {
  OFL_ENSURE(choice.size() == nodes_.size(), "cost graph: a choice for ", choice.size(),
             " nodes, the graph has ", nodes_.size());
  Solution s;
  s.choice = choice;
  s.node_seconds.resize(nodes_.size());
  s.edge_seconds.resize(edges_.size());
  for (int i = 0; i < num_nodes(); ++i) {
    OFL_ENSURE(choice[i] >= 0 && choice[i] < num_candidates(i), "cost graph: node '",
               nodes_[i].name, "' has no candidate ", choice[i], " (it has ", num_candidates(i),
               ")");
    const Candidate& c = nodes_[i].candidates[choice[i]];
    s.node_seconds[i] = c.compute_seconds;
    s.compute_seconds += c.compute_seconds;
    s.memory_bytes += c.memory_bytes;
  }
  for (int e = 0; e < num_edges(); ++e) {
    s.edge_seconds[e] = edges_[e].matrix->at(choice[edges_[e].from], choice[edges_[e].to]);
    s.transfer_seconds += s.edge_seconds[e];
  }
  s.total_seconds = s.compute_seconds + s.transfer_seconds;
  s.fits_memory = s.memory_bytes <= memory_limit_;
  return s;
}

std::string Solution::ToString(const CostGraph& graph, int max_lines) const {
  std::string out = StrCat("total ", FormatSeconds(total_seconds), " = compute ",
                           FormatSeconds(compute_seconds), " + transfer ",
                           FormatSeconds(transfer_seconds), "; memory ", FormatBytes(memory_bytes),
                           " per device", fits_memory ? "" : " (over the limit)", "\n");
  std::vector<int> order(node_seconds.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return node_seconds[a] > node_seconds[b]; });
  for (int i = 0; i < std::min<int>(max_lines, order.size()); ++i) {
    int n = order[i];
    out += StrCat("  node ", graph.node(n).name, ": candidate ", choice[n], ", ",
                  FormatSeconds(node_seconds[n]), "\n");
  }
  order.resize(edge_seconds.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return edge_seconds[a] > edge_seconds[b]; });
  for (int i = 0; i < std::min<int>(max_lines, order.size()); ++i) {
    const CostEdge& e = graph.edge(order[i]);
    out += StrCat("  edge ", graph.node(e.from).name, " -> ", graph.node(e.to).name, ": ",
                  FormatSeconds(edge_seconds[order[i]]), "\n");
  }
  return out;
}

std::string FormatSeconds(double seconds) {
  char text[32];
  double a = std::fabs(seconds);
  if (a >= 1 || a == 0) {
    std::snprintf(text, sizeof(text), "%.4g s", seconds);
  } else if (a >= 1e-3) {
    std::snprintf(text, sizeof(text), "%.4g ms", seconds * 1e3);
  } else {
    std::snprintf(text, sizeof(text), "%.4g us", seconds * 1e6);
  }
  return text;
}

std::string FormatBytes(int64_t bytes) {
  if (bytes == kNoMemoryLimit) return "no limit";
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024 && unit < 5) {
    value /= 1024;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof(text), "%.4g %s", value, units[unit]);
  return text;
}

}  // namespace ofl
