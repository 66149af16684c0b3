#include "graph/strategy_dot.h"

#include <sstream>

namespace ofl {

namespace {

// A DOT double-quoted string: backslash and quote escaped, a newline as \n.
std::string Quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

bool IsAuxiliary(const std::string& op) {
  for (const char* prefix : {"grad/", "update/", "clip/"}) {
    if (op.rfind(prefix, 0) == 0) return true;
  }
  return false;
}

}  // namespace

std::string StrategyToDot(const OpGraph& graph, const Strategy& strategy) {
  std::ostringstream out;
  out << "digraph strategy {\n  rankdir=TB;\n  node [fontname=\"monospace\", fontsize=10];\n"
      << "  label=" << Quote("placement " + strategy.placement().ToString()) << ";\n";
  const Placement& home = strategy.placement();
  std::map<std::string, std::string> producer;  // tensor -> DOT node id
  auto source = [&](const std::string& name) {
    auto sbp = strategy.sources().find(name);
    std::string label =
        name + "\n" + (sbp == strategy.sources().end() ? "?" : sbp->second.ToString());
    const Placement& p = strategy.SourcePlacement(name);
    if (!(p == home)) label += "\non " + p.ToString();
    out << "  " << Quote("src:" + name) << " [shape=ellipse, label=" << Quote(label) << "];\n";
    producer[name] = "src:" + name;
  };
  for (const std::string& name : graph.input_names()) source(name);
  for (const std::string& name : graph.variable_names()) source(name);
  for (const OpNode& node : graph.ops()) {
    auto sig = strategy.signatures().find(node.name);
    std::string label = node.name + " = " + node.type + "\n" +
                        (sig == strategy.signatures().end() ? "?" : sig->second.ToString());
    const Placement& p = strategy.PlacementOf(node.name);
    if (!(p == home)) label += "\non " + p.ToString();
    out << "  " << Quote("op:" + node.name) << " [shape=box, label=" << Quote(label)
        << (IsAuxiliary(node.name) ? ", color=grey, fontcolor=grey40" : "") << "];\n";
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      const std::string& tensor = node.inputs[i];
      auto from = producer.find(tensor);
      if (from == producer.end()) continue;  // CHECKed by Validate; keep the export total
      Maybe<NdSbp> made = strategy.ProducedSbp(graph, tensor);
      std::string made_text = made.ok() ? made.value().ToString() : "?";
      std::string edge = "  " + Quote(from->second) + " -> " + Quote("op:" + node.name);
      if (sig != strategy.signatures().end() && i < sig->second.inputs.size() && made.ok() &&
          !(sig->second.inputs[i] == made.value())) {
        out << edge << " [color=red, fontcolor=red, label="
            << Quote("boxing " + made_text + " -> " + sig->second.inputs[i].ToString()) << "];\n";
      } else {
        out << edge << " [label=" << Quote(made_text) << "];\n";
      }
    }
    for (const std::string& o : node.outputs) producer[o] = "op:" + node.name;
  }
  out << "}\n";
  return out.str();
}

}  // namespace ofl
