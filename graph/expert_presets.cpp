// Expert presets: source layouts by expert rule, both families
// (expert_presets.h).
#include "graph/expert_presets.h"

#include <algorithm>
#include <sstream>

namespace ofl {

namespace {

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

NdSbp Same(int64_t axes, const Sbp& sbp) { return NdSbp(std::vector<Sbp>(axes, sbp)); }

// The variable a forward matmul reads as its second input: directly, or
// through the forward cast that mixed precision puts in front of it; ""
// when `mm` is no such matmul.
std::string MatmulWeight(const OpGraph& graph, const OpNode& mm) {
  if (mm.type != "matmul" || RoleOf(mm) != OpRole::kForward || mm.inputs.size() != 2) return "";
  const std::string& b = mm.inputs[1];
  if (graph.IsVariable(b)) return b;
  for (const OpNode& op : graph.ops()) {
    if (op.type == "cast" && RoleOf(op) == OpRole::kForward && op.outputs.size() == 1 &&
        op.outputs[0] == b && graph.IsVariable(op.inputs[0])) {
      return op.inputs[0];
    }
  }
  return "";
}

// The forward matmul that reads `weight` as its second input; null if none.
const OpNode* ReadingMatmul(const OpGraph& graph, const std::string& weight) {
  for (const OpNode& op : graph.ops()) {
    if (MatmulWeight(graph, op) == weight) return &op;
  }
  return nullptr;
}

// The weight's tensor axis holding output features (column-parallel split),
// or input features (row-parallel), from the reading matmul's transpose_b.
Maybe<int64_t> FeatureAxis(const OpGraph& graph, const std::string& weight, bool output) {
  const OpNode* mm = ReadingMatmul(graph, weight);
  OFL_ENSURE(mm != nullptr, "expert preset: weight '", weight,
             "' is not the second input of a forward matmul; cannot tell its "
             "feature axes");
  const bool tb = mm->attrs.Get<bool>("transpose_b");  // [out, in] when set, else [in, out]
  return output ? (tb ? 0 : 1) : (tb ? 1 : 0);
}

std::string BiasOf(const std::string& weight) {
  return weight.substr(0, weight.size() - std::string("weight").size()) + "bias";
}

// Megatron's tensor-parallel layout of the Transformer weights: weight or
// bias -> the tensor axis split (column-parallel: output features, bias
// S(0); row-parallel: input features). `rules` (the rule-based preset):
// the LM head column-parallel too, and a graph without Transformer names
// gets Megatron's MLP pairs. Errors when nothing applies.
Maybe<std::map<std::string, int64_t>> MegatronSplits(const OpGraph& graph, bool rules) {
  std::map<std::string, int64_t> splits;
  std::vector<std::string> others;  // forward matmul weights with other names, graph order
  for (const OpNode& op : graph.ops()) {
    const std::string v = MatmulWeight(graph, op);
    if (v.empty()) continue;
    const bool column = EndsWith(v, ".attn.qkv.weight") || EndsWith(v, ".mlp.fc.weight");
    const bool row = EndsWith(v, ".attn.proj.weight") || EndsWith(v, ".mlp.proj.weight");
    if (!column && !row) {
      others.push_back(v);
      continue;
    }
    OFL_ASSIGN_OR_RETURN(splits[v], FeatureAxis(graph, v, column));
    if (column && graph.IsVariable(BiasOf(v))) splits[BiasOf(v)] = 0;
  }
  // Megatron's VocabParallelEmbedding: a table a forward embedding reads
  // (the token embedding) split on the vocabulary, its output P.
  for (const OpNode& op : graph.ops()) {
    if (rules && op.type == "embedding" && RoleOf(op) == OpRole::kForward && !splits.empty() &&
        graph.IsVariable(op.inputs[0])) {
      splits[op.inputs[0]] = 0;
    }
  }
  if (rules && !splits.empty() && !others.empty()) {
    OFL_ASSIGN_OR_RETURN(splits[others.back()], FeatureAxis(graph, others.back(), true));
  } else if (rules && splits.empty()) {
    for (size_t i = 0; i < others.size(); ++i) {
      const bool column = i % 2 == 0;
      OFL_ASSIGN_OR_RETURN(splits[others[i]], FeatureAxis(graph, others[i], column));
      if (column && EndsWith(others[i], "weight") && graph.IsVariable(BiasOf(others[i]))) {
        splits[BiasOf(others[i])] = 0;
      }
    }
  }
  OFL_ENSURE(!splits.empty(), "expert preset megatron", rules ? "" : "_sources",
             ": no Transformer block weights (variables named *.attn.qkv.weight, "
             "*.attn.proj.weight, *.mlp.fc.weight, *.mlp.proj.weight)",
             rules ? " and no weight read by a forward matmul" : "");
  return splits;
}

// The classifier of a VGG-style model: weights read by a forward matmul,
// split on output features; their biases (bias_add right after) S(0).
Maybe<std::map<std::string, int64_t>> ClassifierSplits(const OpGraph& graph) {
  bool conv = false;
  for (const OpNode& op : graph.ops()) conv = conv || op.type == "conv2d";
  OFL_ENSURE(conv, "expert preset vgg: the graph has no conv2d op");
  std::map<std::string, int64_t> splits;
  for (const OpNode& op : graph.ops()) {
    const std::string w = MatmulWeight(graph, op);
    if (w.empty()) continue;
    OFL_ASSIGN_OR_RETURN(splits[w], FeatureAxis(graph, w, true));
    for (const OpNode& next : graph.ops()) {
      if (next.type == "bias_add" && next.inputs.size() == 2 && next.inputs[0] == op.outputs[0] &&
          graph.IsVariable(next.inputs[1])) {
        splits[next.inputs[1]] = 0;
      }
    }
  }
  OFL_ENSURE(!splits.empty(),
             "expert preset vgg: no classifier weight (a variable read by a "
             "matmul as its second input)");
  return splits;
}

// State variables (written in place, not the parameter) -> their parameter.
std::map<std::string, std::string> StateOwners(const OpGraph& graph) {
  std::map<std::string, std::string> owner;
  for (const OpNode& op : graph.ops()) {
    if (RoleOf(op) != OpRole::kUpdate) continue;
    const OpDef* def = OpRegistry::Find(op.type).value();
    std::string param;
    for (size_t i = 0; i < op.inputs.size(); ++i) {
      if (!def->is_mutable_input(static_cast<int>(i))) continue;
      if (param.empty()) {
        param = op.inputs[i];
      } else {
        owner[op.inputs[i]] = param;
      }
    }
  }
  return owner;
}

}  // namespace

std::vector<std::string> ExpertPresetNames() {
  return {"data_parallel", "megatron", "2d", "zero", "vgg"};
}

std::vector<std::string> ExpertSourcePresetNames() {
  return {"data_parallel_sources", "megatron_sources", "2d_sources", "vgg_sources"};
}

Maybe<std::map<std::string, NdSbp>> ExpertPresetSources(const std::string& preset,
                                                        const OpGraph& graph,
                                                        const Placement& placement) {
  const std::string kSuffix = "_sources";
  const bool sources_only = EndsWith(preset, kSuffix);
  const std::string base = sources_only ? preset.substr(0, preset.size() - kSuffix.size()) : preset;
  const auto rules = ExpertPresetNames();
  const auto source_names = ExpertSourcePresetNames();
  if (std::find(sources_only ? source_names.begin() : rules.begin(),
                sources_only ? source_names.end() : rules.end(),
                preset) == (sources_only ? source_names.end() : rules.end())) {
    std::ostringstream valid;
    std::vector<std::string> names = rules;
    names.insert(names.end(), source_names.begin(), source_names.end());
    for (size_t i = 0; i < names.size(); ++i) valid << (i ? ", " : "") << names[i];
    return InvalidArgument("expert preset: unknown name '", preset, "'; valid: ", valid.str());
  }
  const int64_t axes = placement.hierarchy().ndim();
  const NdSbp all_b = Same(axes, Sbp::Broadcast());
  std::map<std::string, NdSbp> out;
  std::map<std::string, int64_t> splits;  // weight -> tensor axis split (model parallel)
  std::vector<Sbp> data_axes(axes, Sbp::Split(0));
  if (base == "megatron") {
    OFL_ASSIGN_OR_RETURN(splits, MegatronSplits(graph, !sources_only));
    data_axes.assign(axes, Sbp::Broadcast());
  } else if (base == "2d") {
    OFL_ENSURE(axes == 2, "expert preset ", preset,
               ": needs a 2-D mesh (data x tensor parallel), got hierarchy ",
               placement.hierarchy());
    OFL_ASSIGN_OR_RETURN(splits, MegatronSplits(graph, !sources_only));
    data_axes = {Sbp::Split(0), Sbp::Broadcast()};
  } else if (base == "vgg") {
    OFL_ASSIGN_OR_RETURN(splits, ClassifierSplits(graph));
  }
  for (const std::string& name : graph.input_names()) {
    // Scalars (a fed learning rate) stay B.
    out[name] = graph.Desc(name).value().shape.ndim() == 0 ? all_b : NdSbp(data_axes);
  }
  const std::map<std::string, std::string> owners = StateOwners(graph);
  for (const std::string& v : graph.variable_names()) {
    if (owners.count(v) > 0) continue;
    auto it = splits.find(v);
    if (base == "zero") {
      const bool split = graph.variable(v).trainable && graph.Desc(v).value().shape.ndim() > 0;
      out[v] = split ? Same(axes, Sbp::Split(0)) : all_b;
    } else if (it == splits.end()) {
      out[v] = all_b;
    } else if (base == "2d") {
      out[v] = NdSbp({Sbp::Broadcast(), Sbp::Split(it->second)});
    } else {
      out[v] = Same(axes, Sbp::Split(it->second));
    }
  }
  for (const auto& [state, param] : owners) {
    const bool follows = graph.Desc(state).value().shape == graph.Desc(param).value().shape;
    out[state] = follows ? out.at(param) : all_b;
  }
  return out;
}

Maybe<PlannedStrategy> BestExpertPreset(const OpGraph& graph,
                                        std::shared_ptr<const CostModel> model,
                                        const PlanOptions& options,
                                        std::vector<std::string>* tried) {
  std::optional<PlannedStrategy> best;
  std::ostringstream why;
  for (const std::string& name : ExpertPresetNames()) {
    PlanOptions o = options;
    o.searcher = name;
    Maybe<PlannedStrategy> p = PlanWithModel(graph, model, o);
    std::string line;
    if (p.ok()) {
      line = StrCat(name, ": ", FormatSeconds(p.value().solution.total_seconds));
      if (!best || p.value().solution.total_seconds < best->solution.total_seconds) {
        best = std::move(p).value();
      }
    } else {
      line = StrCat(name, ": ", p.status().message());
    }
    why << "\n  " << line;
    if (tried != nullptr) tried->push_back(line);
  }
  if (!best) return InvalidArgument("expert presets: none applies:", why.str());
  const std::string notes = best->stats.note;
  best->stats.note = StrCat("best expert preset '", best->searcher, "'", why.str(),
                            notes.empty() ? "" : "\n", notes);
  return std::move(*best);
}

}  // namespace ofl
