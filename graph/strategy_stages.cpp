// Pipeline stages of graph/strategy.h: AssignStages puts contiguous runs of
// the forward ops on their own placements and the backward, the updates and
// the sources after them. Pure functions; not synchronised.
#include <map>
#include <set>

#include "graph/strategy.h"

namespace ofl {

namespace {

bool HasMutableInput(const OpNode& node) {
  const OpDef* def = OpRegistry::Find(node.type).value();
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    if (def->is_mutable_input(static_cast<int>(i))) return true;
  }
  return false;
}

bool StartsWith(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

// The forward ops: graph order up to "grad/seed", without grads and updates.
std::vector<const OpNode*> ForwardOps(const OpGraph& graph) {
  std::vector<const OpNode*> out;
  for (const OpNode& node : graph.ops()) {
    if (node.name == "grad/seed") break;
    if (StartsWith(node.name, "grad/") || HasMutableInput(node)) continue;
    out.push_back(&node);
  }
  return out;
}

}  // namespace

int64_t NumForwardOps(const OpGraph& graph) {
  return static_cast<int64_t>(ForwardOps(graph).size());
}

Status AssignStages(const OpGraph& graph, const std::vector<Placement>& stages,
                    const std::vector<int64_t>& boundaries, Strategy* strategy) {
  const std::vector<const OpNode*> forward = ForwardOps(graph);
  const int64_t n = static_cast<int64_t>(forward.size());
  OFL_ENSURE(!stages.empty() && boundaries.size() + 1 == stages.size(), "stages: ", stages.size(),
             " placements need ", stages.size() - 1, " boundaries, got ", boundaries.size());
  std::set<int64_t> ranks;
  for (const Placement& p : stages) {
    for (int64_t r : p.ranks()) {
      OFL_ENSURE(ranks.insert(r).second, "stages: rank ", r, " is in two stage placements");
    }
  }
  for (size_t b = 0; b < boundaries.size(); ++b) {
    const int64_t lo = b == 0 ? 0 : boundaries[b - 1];
    OFL_ENSURE(boundaries[b] > lo && boundaries[b] < n, "stages: boundary ", boundaries[b],
               " is not in (", lo, ", ", n, ") (", n, " forward ops)");
  }
  std::map<std::string, const Placement*> op_stage;      // op -> placement
  std::map<std::string, const Placement*> tensor_stage;  // produced tensor -> placement
  size_t stage = 0;
  for (int64_t i = 0; i < n; ++i) {
    while (stage < boundaries.size() && i >= boundaries[stage]) ++stage;
    op_stage[forward[i]->name] = &stages[stage];
  }
  // The stage of a tensor's producer, or nullptr for sources.
  auto produced = [&](const std::string& t) -> const Placement* {
    auto it = tensor_stage.find(t);
    return it == tensor_stage.end() ? nullptr : it->second;
  };
  // First forward reader of each tensor (for sources and updates).
  std::map<std::string, const Placement*> first_reader;
  for (const OpNode* node : forward) {
    for (const std::string& in : node->inputs) first_reader.emplace(in, op_stage.at(node->name));
  }
  for (const OpNode& node : graph.ops()) {
    const Placement* p = nullptr;
    auto known = op_stage.find(node.name);
    if (known != op_stage.end()) {
      p = known->second;
    } else if (node.name == "grad/seed") {
      p = produced(graph.loss());
    } else if (StartsWith(node.name, "grad/sum/")) {
      p = produced(node.name.substr(9));
    } else if (StartsWith(node.name, "grad/")) {
      const std::string rest = node.name.substr(5);
      auto slash = rest.rfind('/');
      auto fwd = op_stage.find(slash == std::string::npos ? rest : rest.substr(0, slash));
      if (fwd != op_stage.end()) p = fwd->second;
    } else if (HasMutableInput(node)) {
      auto r = first_reader.find(node.inputs[0]);
      if (r != first_reader.end()) p = r->second;
    }
    for (size_t i = 0; p == nullptr && i < node.inputs.size(); ++i) p = produced(node.inputs[i]);
    if (p == nullptr) {  // reads only sources: their first reader's stage, else the last
      auto r = node.inputs.empty() ? first_reader.end() : first_reader.find(node.inputs[0]);
      p = r != first_reader.end() ? r->second : &stages.back();
    }
    op_stage[node.name] = p;
    strategy->SetPlacement(node.name, *p);
    for (const std::string& out : node.outputs) tensor_stage[out] = p;
  }
  // Sources: variables written in place follow their update, others their first reader.
  std::map<std::string, const Placement*> source_stage;
  for (const OpNode& node : graph.ops()) {
    const OpDef* def = OpRegistry::Find(node.type).value();
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      const std::string& in = node.inputs[i];
      if (!graph.IsInput(in) && !graph.IsVariable(in)) continue;
      if (def->is_mutable_input(static_cast<int>(i))) {
        source_stage[in] = op_stage.at(node.name);
      } else {
        source_stage.emplace(in, op_stage.at(node.name));
      }
    }
  }
  for (const auto& [tensor, p] : source_stage) strategy->SetSourcePlacement(tensor, *p);
  return Status::OK();
}

}  // namespace ofl
