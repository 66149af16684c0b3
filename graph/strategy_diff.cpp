#include "graph/strategy_diff.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "oneflow_lite/core/json.h"

namespace ofl {
namespace {

std::string LayoutOf(const CostNodeInfo& info, int candidate) {
  if (!info.signatures.empty()) return info.signatures[candidate].ToString();
  if (!info.sbps.empty()) return info.sbps[candidate].ToString();
  return "#" + std::to_string(candidate);
}

std::string Signed(double seconds) {
  return (seconds < 0 ? "-" : "+") + FormatSeconds(std::fabs(seconds));
}

std::string SignedBytes(int64_t bytes) {
  return (bytes < 0 ? "-" : "+") + FormatBytes(bytes < 0 ? -bytes : bytes);
}

}  // namespace

Maybe<StrategyDiff> DiffStrategies(const CostModel& model, const std::vector<int>& before,
                                   const std::vector<int>& after) {
  const CostGraph& g = model.graph();
  OFL_ASSIGN_OR_RETURN(Solution a, g.Evaluate(before));
  OFL_ASSIGN_OR_RETURN(Solution b, g.Evaluate(after));
  StrategyDiff diff;
  diff.before_seconds = a.total_seconds;
  diff.after_seconds = b.total_seconds;
  diff.before_memory = a.memory_bytes;
  diff.after_memory = b.memory_bytes;
  for (int i = 0; i < g.num_nodes(); ++i) {
    if (before[i] == after[i]) continue;
    const CostNodeInfo& info = model.nodes()[i];
    NodeChange c;
    c.name = info.name;
    c.kind = CostNodeKindName(info.kind);
    c.before = LayoutOf(info, before[i]);
    c.after = LayoutOf(info, after[i]);
    c.compute_delta = b.node_seconds[i] - a.node_seconds[i];
    c.memory_delta =
        g.node(i).candidates[after[i]].memory_bytes - g.node(i).candidates[before[i]].memory_bytes;
    diff.nodes.push_back(std::move(c));
  }
  for (int e = 0; e < g.num_edges(); ++e) {
    const CostEdgeInfo& info = model.edges()[e];
    const int p = info.producer, q = info.consumer;
    if (before[p] == after[p] && before[q] == after[q]) continue;
    if (a.edge_seconds[e] == b.edge_seconds[e]) continue;
    EdgeChange c;
    c.tensor = info.tensor;
    c.producer = model.nodes()[p].name;
    c.consumer = model.nodes()[q].name;
    c.before = model.ProducedSbp(e, before[p]).ToString() + " -> " +
               model.WantedSbp(e, before[q]).ToString();
    c.after = model.ProducedSbp(e, after[p]).ToString() + " -> " +
              model.WantedSbp(e, after[q]).ToString();
    c.before_seconds = a.edge_seconds[e];
    c.after_seconds = b.edge_seconds[e];
    diff.edges.push_back(std::move(c));
  }
  std::stable_sort(diff.nodes.begin(), diff.nodes.end(),
                   [](const NodeChange& x, const NodeChange& y) {
                     return std::fabs(x.compute_delta) > std::fabs(y.compute_delta);
                   });
  std::stable_sort(diff.edges.begin(), diff.edges.end(),
                   [](const EdgeChange& x, const EdgeChange& y) {
                     return std::fabs(x.delta()) > std::fabs(y.delta());
                   });
  return diff;
}

std::string StrategyDiff::ToText(bool full, int max_rows) const {
  std::ostringstream out;
  out << "predicted step " << FormatSeconds(before_seconds) << " -> "
      << FormatSeconds(after_seconds) << " (" << Signed(delta()) << "); memory "
      << FormatBytes(before_memory) << " -> " << FormatBytes(after_memory) << "; " << nodes.size()
      << " node(s) and " << edges.size() << " edge(s) changed\n";
  const size_t node_rows = full ? nodes.size() : std::min<size_t>(nodes.size(), max_rows);
  for (size_t i = 0; i < node_rows; ++i) {
    const NodeChange& c = nodes[i];
    out << "  " << c.kind << " " << c.name << ": " << c.before << "  =>  " << c.after
        << "  compute " << Signed(c.compute_delta) << ", memory " << SignedBytes(c.memory_delta)
        << "\n";
  }
  if (node_rows < nodes.size()) out << "  ... " << nodes.size() - node_rows << " more nodes\n";
  const size_t edge_rows = full ? edges.size() : std::min<size_t>(edges.size(), max_rows);
  for (size_t i = 0; i < edge_rows; ++i) {
    const EdgeChange& c = edges[i];
    out << "  edge " << c.tensor << " (" << c.producer << " -> " << c.consumer << "): " << c.before
        << " " << FormatSeconds(c.before_seconds) << "  =>  " << c.after << " "
        << FormatSeconds(c.after_seconds) << "  (" << Signed(c.delta()) << ")\n";
  }
  if (edge_rows < edges.size()) out << "  ... " << edges.size() - edge_rows << " more edges\n";
  return out.str();
}

std::string StrategyDiff::ToJson() const {
  std::ostringstream out;
  out << "{\"before_s\": " << JsonNumber(before_seconds)
      << ", \"after_s\": " << JsonNumber(after_seconds) << ", \"delta_s\": " << JsonNumber(delta())
      << ", \"before_memory_bytes\": " << before_memory
      << ", \"after_memory_bytes\": " << after_memory << ", \"nodes\": [";
  for (size_t i = 0; i < nodes.size(); ++i) {
    const NodeChange& c = nodes[i];
    out << (i ? ", " : "") << "{\"name\": " << JsonString(c.name)
        << ", \"kind\": " << JsonString(c.kind) << ", \"before\": " << JsonString(c.before)
        << ", \"after\": " << JsonString(c.after)
        << ", \"compute_delta_s\": " << JsonNumber(c.compute_delta)
        << ", \"memory_delta_bytes\": " << c.memory_delta << "}";
  }
  out << "], \"edges\": [";
  for (size_t i = 0; i < edges.size(); ++i) {
    const EdgeChange& c = edges[i];
    out << (i ? ", " : "") << "{\"tensor\": " << JsonString(c.tensor)
        << ", \"producer\": " << JsonString(c.producer)
        << ", \"consumer\": " << JsonString(c.consumer) << ", \"before\": " << JsonString(c.before)
        << ", \"after\": " << JsonString(c.after)
        << ", \"before_s\": " << JsonNumber(c.before_seconds)
        << ", \"after_s\": " << JsonNumber(c.after_seconds) << "}";
  }
  out << "]}\n";
  return out.str();
}

}  // namespace ofl
