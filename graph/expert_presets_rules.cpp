// Rule-based expert presets: every op's signature by rule, as the data
// flows (expert_presets.h states the rule; this file applies it).
#include <algorithm>
#include <set>
#include <tuple>
#include <utility>

#include "graph/expert_presets.h"

namespace ofl {

namespace {

NdSbp AllBroadcast(int64_t axes) { return NdSbp(std::vector<Sbp>(axes, Sbp::Broadcast())); }

// The conversion rank of one tensor from `have` to `want`, summed over mesh
// axes: 0 kept (S or B); 1 B -> S (a local slice); 2 -> B (all-gather or
// all-reduce), or P kept by an op that passes a P on (an all-reduce
// deferred: so a P meets its first consumer as an all-reduce to B, as
// Megatron places it; kept by an op with no P output, such as the seed of
// backward reading a partial loss, it is 0: no all-reduce at all); 3
// anything else (all-to-all, -> P).
int ConversionRank(const NdSbp& have, const NdSbp& want, bool passes_partial = true) {
  int rank = 0;
  for (int64_t a = 0; a < want.size(); ++a) {
    const Sbp& from = have[a];
    const Sbp& to = want[a];
    int r = 0;
    if (from == to) {
      r = from.is_partial_sum() && passes_partial ? 2 : 0;
    } else if (from.is_broadcast() && to.is_split()) {
      r = 1;
    } else {
      r = to.is_broadcast() ? 2 : 3;
    }
    rank += r;
  }
  return rank;
}

bool HasPartial(const NdSbp& sbp) {
  for (const Sbp& s : sbp.axes()) {
    if (s.is_partial_sum()) return true;
  }
  return false;
}

bool AllBroadcastSignature(const NdSbpSignature& sig) {
  for (const NdSbp& t : sig.inputs) {
    if (t != AllBroadcast(t.size())) return false;
  }
  for (const NdSbp& t : sig.outputs) {
    if (t != AllBroadcast(t.size())) return false;
  }
  return true;
}

// Which inputs of `op` it writes in place (an optimizer update), in order.
std::vector<int> MutableInputIndices(const OpNode& op) {
  const OpDef* def = OpRegistry::Find(op.type).value();
  std::vector<int> out;
  for (size_t i = 0; i < op.inputs.size(); ++i) {
    if (def->is_mutable_input(static_cast<int>(i))) out.push_back(static_cast<int>(i));
  }
  return out;
}

// What the rule walks with: the stored layout of every source, the layout
// ops compute with for variables (zero: B), and every produced tensor's.
struct Walk {
  const OpGraph& graph;
  bool gather_weights;                    // zero: weights read as B
  std::map<std::string, NdSbp> produced;  // sources (stored) and op outputs
  std::vector<std::string> notes;
  std::set<std::pair<std::string, NdSbp>> gathered;  // (tensor, layout) noted once
  // Per tensor, the layouts some op already reads it in: lowering boxes a
  // tensor once per layout, so a later reader gets that layout at no cost.
  std::map<std::string, std::set<NdSbp>> boxed;
  // A weight's gradient (an update's input of the weight's shape) -> the
  // weight's stored layout, which the update boxes it to.
  std::map<std::string, NdSbp> update_wants;

  // The layouts `tensor` is already boxed to (null: none), looked up once
  // per input rather than per candidate signature.
  const std::set<NdSbp>* BoxedTo(const std::string& tensor) const {
    auto it = boxed.find(tensor);
    return it == boxed.end() ? nullptr : &it->second;
  }
  static int Rank(const std::set<NdSbp>* boxed_to, const NdSbp& have, const NdSbp& want,
                  bool passes_partial) {
    return boxed_to != nullptr && boxed_to->count(want) > 0
               ? 0
               : ConversionRank(have, want, passes_partial);
  }
  void Read(const OpNode& op, const NdSbpSignature& sig) {
    for (size_t i = 0; i < op.inputs.size(); ++i) boxed[op.inputs[i]].insert(sig.inputs[i]);
  }

  // The layout `op` reads input `i` in before any boxing it chooses.
  NdSbp Reads(const OpNode& op, size_t i) const {
    const std::string& t = op.inputs[i];
    const NdSbp& sbp = produced.at(t);
    if (gather_weights && graph.IsVariable(t) && graph.variable(t).trainable) {
      return AllBroadcast(sbp.size());
    }
    return sbp;
  }
};

// An update: every input of the parameter's shape in the parameter's stored
// layout (the gradient is boxed to it), other non-source inputs B, sources
// as stored.
Maybe<NdSbpSignature> FollowWeight(Walk& walk, const OpNode& op,
                                   const std::vector<NdSbpSignature>& candidates,
                                   const std::vector<int>& mutable_inputs) {
  const std::string& param = op.inputs[mutable_inputs.front()];
  const NdSbp& stored = walk.produced.at(param);
  OFL_ASSIGN_OR_RETURN(TensorDesc param_desc, walk.graph.Desc(param));
  std::vector<NdSbp> want;
  for (const std::string& in : op.inputs) {
    OFL_ASSIGN_OR_RETURN(TensorDesc d, walk.graph.Desc(in));
    if (walk.graph.IsInput(in) || walk.graph.IsVariable(in)) {
      want.push_back(walk.produced.at(in));
    } else {
      want.push_back(d.shape == param_desc.shape ? stored : AllBroadcast(stored.size()));
    }
  }
  for (const NdSbpSignature& c : candidates) {
    if (c.inputs != want) continue;
    walk.Read(op, c);
    return c;
  }
  return InvalidArgument("expert preset: update '", op.name, "' (", op.type,
                         ") has no signature that keeps weight '", param, "' as ", stored,
                         " with its gradient and state alike");
}

// Any other op: among the signatures that keep every variable input as the
// op reads it, the one whose inputs need the least conversion (ranked as
// ConversionRank, summed; 0 for a layout an earlier reader already boxed
// the tensor to), then the least conversion of a weight gradient it makes
// to its update's layout (a vocabulary-split embedding_grad makes S(0), not
// B then sliced), then the fewest outputs with P, then the fewest
// split output axes (an op on whole inputs splits nothing by itself), then
// the registry's order; none: the all-B signature, noted; none either: error.
Maybe<NdSbpSignature> FollowData(Walk& walk, const OpNode& op,
                                 const std::vector<NdSbpSignature>& candidates) {
  std::vector<NdSbp> reads;
  std::vector<const std::set<NdSbp>*> boxed_to;
  std::vector<char> is_variable;
  for (size_t i = 0; i < op.inputs.size(); ++i) {
    reads.push_back(walk.Reads(op, i));
    boxed_to.push_back(walk.BoxedTo(op.inputs[i]));
    is_variable.push_back(walk.graph.IsVariable(op.inputs[i]) ? 1 : 0);
  }
  int best = -1;
  std::tuple<int, int, int, int> best_key;
  for (size_t c = 0; c < candidates.size(); ++c) {
    const NdSbpSignature& sig = candidates[c];
    bool keeps = true;
    bool passes_partial = false;
    for (const NdSbp& out : sig.outputs) passes_partial = passes_partial || HasPartial(out);
    int rank = 0;
    for (size_t i = 0; i < op.inputs.size() && keeps; ++i) {
      keeps = !is_variable[i] || sig.inputs[i] == reads[i];
      rank += Walk::Rank(boxed_to[i], reads[i], sig.inputs[i], passes_partial);
    }
    if (!keeps) continue;
    int partial = 0, splits = 0, to_update = 0;
    for (size_t o = 0; o < sig.outputs.size(); ++o) {
      partial += HasPartial(sig.outputs[o]) ? 1 : 0;
      for (const Sbp& a : sig.outputs[o].axes()) splits += a.is_split() ? 1 : 0;
      auto want = walk.update_wants.find(op.outputs[o]);
      if (want != walk.update_wants.end()) {
        to_update += ConversionRank(sig.outputs[o], want->second);
      }
    }
    const std::tuple<int, int, int, int> key{rank, to_update, partial, splits};
    if (best < 0 || key < best_key) {
      best = static_cast<int>(c);
      best_key = key;
    }
  }
  if (best >= 0) {
    const NdSbpSignature& sig = candidates[best];
    walk.Read(op, sig);
    for (size_t i = 0; i < op.inputs.size(); ++i) {
      bool gathered = false;
      for (int64_t a = 0; a < reads[i].size(); ++a) {
        gathered = gathered || (reads[i][a].is_split() && sig.inputs[i][a].is_broadcast());
      }
      // Lowering boxes a tensor once per layout: one note per (tensor, layout).
      if (gathered && !walk.graph.IsVariable(op.inputs[i]) &&
          walk.gathered.insert({op.inputs[i], sig.inputs[i]}).second) {
        walk.notes.push_back(StrCat("op '", op.name, "' (", op.type, ") gathers input '",
                                    op.inputs[i], "' from ", reads[i], " to ", sig.inputs[i],
                                    ": no signature keeps the split"));
      }
    }
    return sig;
  }
  for (const NdSbpSignature& c : candidates) {
    if (!AllBroadcastSignature(c)) continue;
    walk.Read(op, c);
    walk.notes.push_back(StrCat("op '", op.name, "' (", op.type,
                                ") computes replicated (all inputs B, boxed): no signature "
                                "keeps its weights' layouts"));
    return c;
  }
  return InvalidArgument("expert preset: op '", op.name, "' (", op.type,
                         ") has no signature that keeps its weights' layouts and no "
                         "replicated one");
}

// Sources: the preset's layouts, pins over them, optimizer state following
// its (possibly pinned) parameter.
Maybe<std::map<std::string, NdSbp>> SourceLayouts(const std::string& preset, const OpGraph& graph,
                                                  const Strategy& placements,
                                                  const std::map<std::string, NdSbp>& pinned) {
  OFL_ASSIGN_OR_RETURN(auto sources, ExpertPresetSources(preset, graph, placements.placement()));
  for (const auto& [name, sbp] : pinned) {
    if (sources.count(name) > 0) sources[name] = sbp;
  }
  for (const OpNode& op : graph.ops()) {
    const std::vector<int> mut = MutableInputIndices(op);
    if (mut.empty()) continue;
    const std::string& param = op.inputs[mut.front()];
    OFL_ASSIGN_OR_RETURN(TensorDesc p, graph.Desc(param));
    for (size_t k = 1; k < mut.size(); ++k) {
      const std::string& state = op.inputs[mut[k]];
      OFL_ASSIGN_OR_RETURN(TensorDesc d, graph.Desc(state));
      const NdSbp& follows = sources.at(param);
      sources[state] = d.shape == p.shape ? follows : AllBroadcast(follows.size());
    }
  }
  return sources;
}

}  // namespace

Maybe<ExpertPresetPlan> ExpertPresetStrategy(const std::string& preset, const OpGraph& graph,
                                             const Strategy& placements,
                                             const std::map<std::string, NdSbp>& pinned,
                                             const SignaturesOf& signatures_of) {
  const auto names = ExpertPresetNames();
  if (std::find(names.begin(), names.end(), preset) == names.end()) {
    // The unknown-name error, or: a source preset has no rule for ops.
    OFL_RETURN_IF_ERROR(ExpertPresetSources(preset, graph, placements.placement()).status());
    return InvalidArgument("expert preset '", preset, "' fixes only sources (plan it instead)");
  }
  OFL_ASSIGN_OR_RETURN(auto sources, SourceLayouts(preset, graph, placements, pinned));
  Walk walk{graph, preset == "zero", sources, {}, {}, {}, {}};
  for (const OpNode& op : graph.ops()) {
    const std::vector<int> mut = MutableInputIndices(op);
    if (mut.empty()) continue;
    const std::string& param = op.inputs[mut.front()];
    for (const std::string& in : op.inputs) {
      if (!graph.IsInput(in) && !graph.IsVariable(in) &&
          graph.Desc(in).value().shape == graph.Desc(param).value().shape) {
        walk.update_wants.emplace(in, sources.at(param));
      }
    }
  }
  ExpertPresetPlan out;
  out.strategy = placements;
  for (const auto& [name, sbp] : sources) out.strategy.SetSourceSbp(name, sbp);
  for (const OpNode& op : graph.ops()) {
    std::vector<NdSbpSignature> own;
    const std::vector<NdSbpSignature>* candidates = &own;
    if (signatures_of) {
      candidates = signatures_of(op);
      OFL_ENSURE(candidates != nullptr, "expert preset ", preset, ": no signatures for op '",
                 op.name, "'");
    } else {
      OFL_ASSIGN_OR_RETURN(own, CandidateSignatures(graph, op, placements.PlacementOf(op.name)));
    }
    const std::vector<int> mut = MutableInputIndices(op);
    NdSbpSignature sig;
    if (!mut.empty()) {
      OFL_ASSIGN_OR_RETURN(sig, FollowWeight(walk, op, *candidates, mut));
    } else {
      OFL_ASSIGN_OR_RETURN(sig, FollowData(walk, op, *candidates));
    }
    for (size_t o = 0; o < op.outputs.size(); ++o) walk.produced[op.outputs[o]] = sig.outputs[o];
    out.strategy.SetSignature(op.name, std::move(sig));
  }
  for (const auto& [name, sbp] : pinned) {
    auto it = walk.produced.find(name);
    OFL_ENSURE(it != walk.produced.end(), "expert preset ", preset, ": pinned tensor '", name,
               "' is not in the graph");
    OFL_ENSURE(it->second == sbp, "expert preset ", preset, ": pinned tensor '", name, "' is ",
               it->second, " under the rule, not the pinned ", sbp);
  }
  // With the caller's signatures (a cost model's) every pick is one of
  // them, which the caller checks (CostModel::ChoiceOf).
  if (!signatures_of) OFL_RETURN_IF_ERROR(out.strategy.Validate(graph));
  out.notes = std::move(walk.notes);
  return out;
}

}  // namespace ofl
