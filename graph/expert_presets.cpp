// Expert presets: source layouts by expert rule (expert_presets.h).
#include "graph/expert_presets.h"

#include <sstream>

namespace ofl {

namespace {

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

NdSbp Same(int64_t axes, const Sbp& sbp) { return NdSbp(std::vector<Sbp>(axes, sbp)); }

// The forward matmul that reads `weight` as its second input; null if none.
const OpNode* ReadingMatmul(const OpGraph& graph, const std::string& weight) {
  for (const OpNode& op : graph.ops()) {
    if (op.type == "matmul" && RoleOf(op) == OpRole::kForward && op.inputs.size() == 2 &&
        op.inputs[1] == weight) {
      return &op;
    }
  }
  return nullptr;
}

// The weight's tensor axis holding output features (column-parallel split),
// or input features (row-parallel), from the reading matmul's transpose_b.
Maybe<int64_t> FeatureAxis(const OpGraph& graph, const std::string& weight, bool output) {
  const OpNode* mm = ReadingMatmul(graph, weight);
  OFL_ENSURE(mm != nullptr, "expert preset: weight '", weight,
             "' is not the second input of a forward matmul; cannot tell its feature axes");
  const bool tb = mm->attrs.Get<bool>("transpose_b");  // [out, in] when set, else [in, out]
  return output ? (tb ? 0 : 1) : (tb ? 1 : 0);
}

std::string BiasOf(const std::string& weight) {
  return weight.substr(0, weight.size() - std::string("weight").size()) + "bias";
}

// Megatron's tensor-parallel layout of the Transformer weights: weight or
// bias -> the tensor axis split (column-parallel: output features, bias
// S(0); row-parallel: input features). Errors when the graph has none.
Maybe<std::map<std::string, int64_t>> MegatronSplits(const OpGraph& graph) {
  std::map<std::string, int64_t> splits;
  for (const std::string& v : graph.variable_names()) {
    const bool column = EndsWith(v, ".attn.qkv.weight") || EndsWith(v, ".mlp.fc.weight");
    const bool row = EndsWith(v, ".attn.proj.weight") || EndsWith(v, ".mlp.proj.weight");
    if (!column && !row) continue;
    OFL_ASSIGN_OR_RETURN(splits[v], FeatureAxis(graph, v, column));
    if (column && graph.IsVariable(BiasOf(v))) splits[BiasOf(v)] = 0;
  }
  OFL_ENSURE(!splits.empty(),
             "expert preset megatron: no Transformer block weights (variables "
             "named *.attn.qkv.weight, *.attn.proj.weight, *.mlp.fc.weight, *.mlp.proj.weight)");
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
    if (op.type != "matmul" || RoleOf(op) != OpRole::kForward || op.inputs.size() != 2 ||
        !graph.IsVariable(op.inputs[1])) {
      continue;
    }
    OFL_ASSIGN_OR_RETURN(splits[op.inputs[1]], FeatureAxis(graph, op.inputs[1], true));
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

std::vector<std::string> ExpertPresetNames() { return {"data_parallel", "megatron", "2d", "vgg"}; }

Maybe<std::map<std::string, NdSbp>> ExpertPresetSources(const std::string& preset,
                                                        const OpGraph& graph,
                                                        const Placement& placement) {
  const int64_t axes = placement.hierarchy().ndim();
  const NdSbp all_b = Same(axes, Sbp::Broadcast());
  std::map<std::string, NdSbp> out;
  auto data = [&](const std::string& name, const std::vector<Sbp>& per_axis) {
    // per_axis: the data's Sbp on each hierarchy axis (S(0) or B); scalars stay B.
    const bool scalar = graph.Desc(name).value().shape.ndim() == 0;
    out[name] = scalar ? all_b : NdSbp(per_axis);
  };
  std::map<std::string, int64_t> splits;  // weight -> tensor axis split (model parallel)
  std::vector<Sbp> data_axes(axes, Sbp::Split(0));
  if (preset == "data_parallel") {
  } else if (preset == "megatron") {
    OFL_ASSIGN_OR_RETURN(splits, MegatronSplits(graph));
    data_axes.assign(axes, Sbp::Broadcast());
  } else if (preset == "2d") {
    OFL_ENSURE(axes == 2,
               "expert preset 2d: needs a 2-D mesh (data x tensor parallel), got "
               "hierarchy ",
               placement.hierarchy());
    OFL_ASSIGN_OR_RETURN(splits, MegatronSplits(graph));
    data_axes = {Sbp::Split(0), Sbp::Broadcast()};
  } else if (preset == "vgg") {
    OFL_ASSIGN_OR_RETURN(splits, ClassifierSplits(graph));
  } else {
    std::ostringstream valid;
    const auto names = ExpertPresetNames();
    for (size_t i = 0; i < names.size(); ++i) valid << (i ? ", " : "") << names[i];
    return InvalidArgument("expert preset: unknown name '", preset, "'; valid: ", valid.str());
  }
  for (const std::string& name : graph.input_names()) data(name, data_axes);
  const std::map<std::string, std::string> owners = StateOwners(graph);
  for (const std::string& v : graph.variable_names()) {
    if (owners.count(v) > 0) continue;
    auto it = splits.find(v);
    if (it == splits.end()) {
      out[v] = all_b;
    } else if (preset == "2d") {
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
  best->stats.note = StrCat("best expert preset '", best->searcher, "'", why.str());
  return std::move(*best);
}

}  // namespace ofl
