#include "graph/strategy.h"

#include <algorithm>
#include <random>
#include <sstream>

namespace ofl {

namespace {

NdSbp AllBroadcast(int64_t axes) { return NdSbp(std::vector<Sbp>(axes, Sbp::Broadcast())); }

// Which variable each in-place input of `node` writes: input index -> name.
std::map<int, std::string> MutableInputs(const OpNode& node) {
  std::map<int, std::string> out;
  const OpDef* def = OpRegistry::Find(node.type).value();
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    if (def->is_mutable_input(static_cast<int>(i))) out[static_cast<int>(i)] = node.inputs[i];
  }
  return out;
}

bool RespectsInPlace(const OpNode& node, const NdSbpSignature& sig,
                     const std::map<std::string, NdSbp>& sources) {
  for (const auto& [i, var] : MutableInputs(node)) {
    auto it = sources.find(var);
    if (it != sources.end() && sig.inputs[i] != it->second) return false;
  }
  return true;
}

// Variables written in place by an update op: the parameter (input 0) and
// its state. Their NdSbp must agree; returns state variable -> parameter.
std::map<std::string, std::string> StateOwners(const OpGraph& graph) {
  std::map<std::string, std::string> owner;
  for (const OpNode& node : graph.ops()) {
    auto mut = MutableInputs(node);
    if (mut.empty()) continue;
    const std::string& param = mut.begin()->second;
    for (const auto& [i, var] : mut) {
      if (var != param) owner[var] = param;
    }
  }
  return owner;
}

// A state variable's NdSbp given its parameter's: the same when the shapes
// agree (moments, momentum), broadcast otherwise (the scalar step).
NdSbp StateSbp(const OpGraph& graph, const std::string& state, const std::string& param,
               const NdSbp& param_sbp) {
  if (graph.Desc(state).value().shape == graph.Desc(param).value().shape) return param_sbp;
  return AllBroadcast(param_sbp.size());
}

// Every input and output B on every axis.
bool IsWhole(const NdSbpSignature& sig) {
  auto whole = [](const NdSbp& sbp) {
    for (const Sbp& s : sbp.axes()) {
      if (!s.is_broadcast()) return false;
    }
    return true;
  };
  return std::all_of(sig.inputs.begin(), sig.inputs.end(), whole) &&
         std::all_of(sig.outputs.begin(), sig.outputs.end(), whole);
}

Status CheckSource(const OpGraph& graph, const Placement& placement, const std::string& name,
                   const NdSbp& sbp) {
  TensorDesc desc = graph.Desc(name).value();
  OFL_RETURN_IF_ERROR(
      ValidateNdSbp(desc.shape, placement.hierarchy(), sbp, StrCat("tensor '", name, "'")));
  for (const Sbp& s : sbp.axes()) {
    OFL_ENSURE(!s.is_partial_sum(), "tensor '", name, "': an input or variable cannot be ", sbp,
               " (P); use S or B");
  }
  return Status::OK();
}

}  // namespace

Maybe<std::vector<NdSbpSignature>> CandidateSignatures(const OpGraph& graph, const OpNode& node,
                                                       const Placement& placement) {
  OFL_ASSIGN_OR_RETURN(const OpDef* def, OpRegistry::Find(node.type));
  return NdSbpSignatures(*def, graph.ContextOf(node), placement.hierarchy().dims());
}

const Placement& Strategy::PlacementOf(const std::string& op) const {
  auto it = op_placements_.find(op);
  return it == op_placements_.end() ? placement_ : it->second;
}

const Placement& Strategy::SourcePlacement(const std::string& tensor) const {
  auto it = source_placements_.find(tensor);
  return it == source_placements_.end() ? placement_ : it->second;
}

Maybe<Placement> Strategy::ProducedPlacement(const OpGraph& graph,
                                             const std::string& tensor) const {
  if (graph.IsInput(tensor) || graph.IsVariable(tensor)) return SourcePlacement(tensor);
  for (const OpNode& node : graph.ops()) {
    for (const std::string& out : node.outputs) {
      if (out == tensor) return PlacementOf(node.name);
    }
  }
  return NotFound("strategy: unknown tensor '", tensor, "'");
}

int64_t Strategy::num_ranks() const {
  int64_t n = 0;
  auto add = [&](const Placement& p) {
    for (int64_t r : p.ranks()) n = std::max(n, r + 1);
  };
  add(placement_);
  for (const auto& [op, p] : op_placements_) add(p);
  for (const auto& [t, p] : source_placements_) add(p);
  return n;
}

Maybe<NdSbp> Strategy::ProducedSbp(const OpGraph& graph, const std::string& tensor) const {
  auto s = sources_.find(tensor);
  if (s != sources_.end()) return s->second;
  for (const OpNode& node : graph.ops()) {
    for (size_t i = 0; i < node.outputs.size(); ++i) {
      if (node.outputs[i] != tensor) continue;
      auto sig = signatures_.find(node.name);
      if (sig == signatures_.end())
        return NotFound("strategy: op '", node.name, "' has no signature");
      return sig->second.outputs[i];
    }
  }
  return NotFound("strategy: unknown tensor '", tensor, "'");
}

Status Strategy::Validate(const OpGraph& graph) const {
  OFL_ENSURE(placement_.size() > 0, "strategy: no placement");
  std::vector<std::string> sources = graph.input_names();
  sources.insert(sources.end(), graph.variable_names().begin(), graph.variable_names().end());
  for (const std::string& name : sources) {
    auto it = sources_.find(name);
    OFL_ENSURE(it != sources_.end(), "strategy: no NdSbp for tensor '", name, "'");
    OFL_RETURN_IF_ERROR(CheckSource(graph, SourcePlacement(name), name, it->second));
  }
  for (const OpNode& node : graph.ops()) {
    auto it = signatures_.find(node.name);
    OFL_ENSURE(it != signatures_.end(), "strategy: op '", node.name, "' (", node.type,
               ") has no signature");
    const Placement& placement = PlacementOf(node.name);
    OFL_ASSIGN_OR_RETURN(auto candidates, CandidateSignatures(graph, node, placement));
    // One device holds every tensor whole: all-B is then every op's signature,
    // listed by its rules or not (an op may declare none).
    bool known = placement.size() == 1 && IsWhole(it->second);
    for (const NdSbpSignature& c : candidates) known = known || c == it->second;
    OFL_ENSURE(known, "strategy: op '", node.name, "' (", node.type, ") has no signature ",
               it->second.ToString(), " on hierarchy ", placement.hierarchy());
    for (const auto& [i, var] : MutableInputs(node)) {
      OFL_ENSURE(SourcePlacement(var) == placement, "strategy: op '", node.name,
                 "' writes variable '", var, "' in place on ", placement.ToString(),
                 " but the variable lives on ", SourcePlacement(var).ToString());
      OFL_ENSURE(it->second.inputs[i] == sources_.at(var), "strategy: op '", node.name,
                 "' writes variable '", var, "' in place as ", it->second.inputs[i],
                 " but the variable is laid out as ", sources_.at(var));
    }
  }
  return Status::OK();
}

std::string Strategy::ToString(const OpGraph& graph) const {
  std::ostringstream out;
  out << "placement " << placement_.ToString() << "\n";
  auto where = [&](const Placement& p) {
    return p == placement_ ? std::string() : " on " + p.ToString();
  };
  for (const auto& [name, sbp] : sources_) {
    out << name << ": " << sbp << where(SourcePlacement(name)) << "\n";
  }
  for (const OpNode& node : graph.ops()) {
    auto it = signatures_.find(node.name);
    out << node.name << " = " << node.type << ": "
        << (it == signatures_.end() ? "?" : it->second.ToString()) << where(PlacementOf(node.name))
        << "\n";
  }
  return out.str();
}

Maybe<Strategy> DeduceStrategy(const OpGraph& graph, const Placement& placement,
                               const std::map<std::string, NdSbp>& pinned) {
  const int64_t axes = placement.hierarchy().ndim();
  Strategy s(placement);
  std::map<std::string, NdSbp> current;
  std::map<std::string, std::string> owners = StateOwners(graph);
  std::vector<std::string> sources = graph.input_names();
  sources.insert(sources.end(), graph.variable_names().begin(), graph.variable_names().end());
  for (const std::string& name : sources) {
    auto p = pinned.find(name);
    NdSbp sbp = p != pinned.end() ? p->second : AllBroadcast(axes);
    if (p != pinned.end()) OFL_RETURN_IF_ERROR(CheckSource(graph, placement, name, sbp));
    current[name] = sbp;
  }
  for (const auto& [state, param] : owners) {
    current[state] = StateSbp(graph, state, param, current.at(param));
  }
  for (const std::string& name : sources) s.SetSourceSbp(name, current.at(name));
  for (const OpNode& node : graph.ops()) {
    OFL_ASSIGN_OR_RETURN(auto candidates, CandidateSignatures(graph, node, placement));
    int best = -1, best_matches = -1;
    for (size_t c = 0; c < candidates.size(); ++c) {
      if (!RespectsInPlace(node, candidates[c], s.sources())) continue;
      int matches = 0;
      for (size_t i = 0; i < node.inputs.size(); ++i) {
        matches += candidates[c].inputs[i] == current.at(node.inputs[i]) ? 1 : 0;
      }
      for (size_t o = 0; o < node.outputs.size(); ++o) {
        auto p = pinned.find(node.outputs[o]);
        if (p != pinned.end() && candidates[c].outputs[o] == p->second) matches += 1000;
      }
      if (matches > best_matches) {
        best = static_cast<int>(c);
        best_matches = matches;
      }
    }
    OFL_ENSURE(best >= 0, "strategy: op '", node.name, "' (", node.type,
               ") has no signature that keeps its in-place inputs' layout");
    s.SetSignature(node.name, candidates[best]);
    for (size_t o = 0; o < node.outputs.size(); ++o) {
      current[node.outputs[o]] = candidates[best].outputs[o];
    }
  }
  OFL_RETURN_IF_ERROR(s.Validate(graph));
  return s;
}

Maybe<Strategy> ReplicatedStrategy(const OpGraph& graph, const Placement& placement) {
  const NdSbp whole = AllBroadcast(placement.hierarchy().ndim());
  Strategy s(placement);
  for (const std::string& name : graph.input_names()) s.SetSourceSbp(name, whole);
  for (const std::string& name : graph.variable_names()) s.SetSourceSbp(name, whole);
  for (const OpNode& node : graph.ops()) {
    NdSbpSignature sig{std::vector<NdSbp>(node.inputs.size(), whole),
                       std::vector<NdSbp>(node.outputs.size(), whole)};
    s.SetSignature(node.name, std::move(sig));
  }
  OFL_RETURN_IF_ERROR(s.Validate(graph));
  return s;
}

namespace {

// Random source NdSbps and op signatures on each one's own placement.
Status DrawRandom(const OpGraph& graph, std::mt19937_64& rng, Strategy* s) {
  std::map<std::string, std::string> owners = StateOwners(graph);
  auto random_source = [&](const std::string& name) {
    const Shape shape = graph.Desc(name).value().shape;
    std::vector<Sbp> axes;
    for (int64_t a = 0; a < s->SourcePlacement(name).hierarchy().ndim(); ++a) {
      int64_t choice = static_cast<int64_t>(rng() % (shape.ndim() + 1));
      axes.push_back(choice == shape.ndim() ? Sbp::Broadcast() : Sbp::Split(choice));
    }
    return NdSbp(axes);
  };
  std::vector<std::string> sources = graph.input_names();
  sources.insert(sources.end(), graph.variable_names().begin(), graph.variable_names().end());
  for (const std::string& name : sources) {
    if (owners.count(name) == 0) s->SetSourceSbp(name, random_source(name));
  }
  for (const auto& [state, param] : owners) {
    s->SetSourceSbp(state, StateSbp(graph, state, param, s->sources().at(param)));
  }
  for (const OpNode& node : graph.ops()) {
    OFL_ASSIGN_OR_RETURN(auto candidates,
                         CandidateSignatures(graph, node, s->PlacementOf(node.name)));
    std::vector<const NdSbpSignature*> allowed;
    for (const NdSbpSignature& c : candidates) {
      if (RespectsInPlace(node, c, s->sources())) allowed.push_back(&c);
    }
    OFL_ENSURE(!allowed.empty(), "strategy: op '", node.name, "' (", node.type,
               ") has no signature that keeps its in-place inputs' layout");
    s->SetSignature(node.name, *allowed[rng() % allowed.size()]);
  }
  return s->Validate(graph);
}

}  // namespace

Maybe<Strategy> RandomStrategy(const OpGraph& graph, const Placement& placement, uint64_t seed) {
  std::mt19937_64 rng(seed);
  Strategy s(placement);
  OFL_RETURN_IF_ERROR(DrawRandom(graph, rng, &s));
  return s;
}

Maybe<Strategy> RandomPipelineStrategy(const OpGraph& graph, const std::vector<Placement>& stages,
                                       uint64_t seed) {
  OFL_ENSURE(!stages.empty(), "strategy: no pipeline stages");
  std::mt19937_64 rng(seed);
  const int64_t forward = NumForwardOps(graph);
  const int64_t n = static_cast<int64_t>(stages.size());
  OFL_ENSURE(forward >= n, "strategy: ", n, " stages for ", forward, " forward ops");
  // n - 1 distinct cut points in [1, forward), ascending.
  std::vector<int64_t> cuts;
  for (int64_t c = 1; c < forward; ++c) cuts.push_back(c);
  std::shuffle(cuts.begin(), cuts.end(), rng);
  cuts.resize(n - 1);
  std::sort(cuts.begin(), cuts.end());
  Strategy s(stages[0]);
  OFL_RETURN_IF_ERROR(AssignStages(graph, stages, cuts, &s));
  OFL_RETURN_IF_ERROR(DrawRandom(graph, rng, &s));
  return s;
}

}  // namespace ofl
