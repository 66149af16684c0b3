// PlanStrategy: cost model, searcher, Strategy (auto_parallel.h).
#include "graph/auto_parallel.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <numeric>
#include <sstream>

#include "graph/expert_presets.h"

namespace ofl {

namespace {

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

bool IsRulePreset(const std::string& name) {
  const auto presets = ExpertPresetNames();
  return std::find(presets.begin(), presets.end(), name) != presets.end();
}

bool IsSourcePreset(const std::string& name) {
  const auto presets = ExpertSourcePresetNames();
  return std::find(presets.begin(), presets.end(), name) != presets.end();
}

// Every preset of both families, rule-based first.
std::vector<std::string> AllPresetNames() {
  std::vector<std::string> names = ExpertPresetNames();
  for (const std::string& p : ExpertSourcePresetNames()) names.push_back(p);
  return names;
}

// A rule-based preset's choice: its strategy, nothing searched; its notes
// (ops that could not follow the rule) in stats->note. Errors when it does
// not fit the memory limit.
Maybe<std::vector<int>> ChooseByRule(const OpGraph& graph, const CostModel& model,
                                     const PlanOptions& options, PlanStats* stats) {
  std::map<std::string, int> node_of;  // op or folded update -> its cost node
  for (size_t u = 0; u < model.nodes().size(); ++u) {
    const CostNodeInfo& n = model.nodes()[u];
    if (n.kind == CostNodeKind::kOp) node_of[n.name] = static_cast<int>(u);
    if (!n.update_op.empty()) node_of[n.update_op] = static_cast<int>(u);
  }
  auto signatures_of = [&](const OpNode& op) -> const std::vector<NdSbpSignature>* {
    auto it = node_of.find(op.name);
    return it == node_of.end() ? nullptr : &model.nodes()[it->second].signatures;
  };
  OFL_ASSIGN_OR_RETURN(ExpertPresetPlan plan,
                       ExpertPresetStrategy(options.searcher, graph, model.placements(),
                                            options.pinned, signatures_of));
  OFL_ASSIGN_OR_RETURN(std::vector<int> choice, model.ChoiceOf(plan.strategy));
  const int64_t need = model.graph().MemoryBytes(choice);
  if (need > model.graph().memory_limit()) {
    return InvalidArgument("plan ", options.searcher, ": the preset needs ", FormatBytes(need),
                           " per device, above the limit of ",
                           FormatBytes(model.graph().memory_limit()));
  }
  constexpr size_t kShown = 8;
  std::ostringstream note;
  if (!plan.notes.empty()) {
    note << "expert preset " << options.searcher << ": " << plan.notes.size()
         << " op(s) could not follow the rule:";
  }
  for (size_t i = 0; i < plan.notes.size() && i < kShown; ++i) note << "\n  " << plan.notes[i];
  if (plan.notes.size() > kShown) note << "\n  ... and " << plan.notes.size() - kShown << " more";
  stats->note = note.str();
  return choice;
}

// `graph` with node u keeping only allowed[u] (empty: all); edge matrices
// are cut to the kept rows and columns (shared again where the cuts agree).
// When nothing is cut it is `graph` itself, not a copy (which must then
// outlive it).
struct Restricted {
  const CostGraph& graph() const { return owned != nullptr ? *owned : *given; }
  std::unique_ptr<CostGraph> owned;
  const CostGraph* given = nullptr;
  std::vector<std::vector<int>> kept;  // per node: original candidate indices
};

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

int64_t MaxAxes(const CostModel& model) {
  int64_t axes = 0;
  for (const CostNodeInfo& n : model.nodes()) axes = std::max(axes, n.placement.hierarchy().ndim());
  return axes;
}

// Per node of a graph restricted to `kept` (original indices), the positions
// of its candidates that hold every tensor B on hierarchy `axis` (nodes on a
// placement without that axis keep all); empty when some node has none.
std::vector<std::vector<int>> ReplicatingCandidates(const CostModel& model, int64_t axis,
                                                    const std::vector<std::vector<int>>& kept) {
  std::vector<std::vector<int>> out(kept.size());
  for (size_t u = 0; u < kept.size(); ++u) {
    const CostNodeInfo& n = model.nodes()[u];
    if (axis >= n.placement.hierarchy().ndim()) {
      for (size_t i = 0; i < kept[u].size(); ++i) out[u].push_back(static_cast<int>(i));
      continue;
    }
    for (size_t i = 0; i < kept[u].size(); ++i) {
      const int c = kept[u][i];
      bool replicated = true;
      if (n.signatures.empty()) {
        replicated = n.sbps[c][axis].is_broadcast();
      } else {
        const NdSbpSignature& sig = n.signatures[c];
        for (const NdSbp& t : sig.inputs) replicated = replicated && t[axis].is_broadcast();
        for (const NdSbp& t : sig.outputs) replicated = replicated && t[axis].is_broadcast();
      }
      if (replicated) out[u].push_back(static_cast<int>(i));
    }
    if (out[u].empty()) return {};
  }
  return out;
}

// Per node of a graph restricted to `kept` (original indices), per
// candidate, an id per hierarchy axis of its layout there (the Sbp of every
// input and output on that axis; ids equal = the same layout), for
// autoddl's axis moves. Nodes on a placement with fewer axes label the
// missing ones 0.
AxisLabels AxisLabelsOf(const CostModel& model, const std::vector<std::vector<int>>& kept) {
  AxisLabels labels;
  labels.axes = static_cast<int>(MaxAxes(model));
  if (labels.axes < 2) return labels;
  labels.of.resize(kept.size());
  std::map<std::vector<Sbp>, int> ids;  // per node and axis: layout -> id
  std::vector<Sbp> layout;
  for (size_t u = 0; u < kept.size(); ++u) {
    const CostNodeInfo& n = model.nodes()[u];
    const int64_t ndim = n.placement.hierarchy().ndim();
    std::vector<int>& out = labels.of[u];
    out.assign(kept[u].size() * labels.axes, 0);
    for (int64_t a = 0; a < ndim && a < labels.axes; ++a) {
      ids.clear();
      for (size_t i = 0; i < kept[u].size(); ++i) {
        const int c = kept[u][i];
        layout.clear();
        if (n.signatures.empty()) {
          layout.push_back(n.sbps[c][a]);
        } else {
          for (const NdSbp& t : n.signatures[c].inputs) layout.push_back(t[a]);
          for (const NdSbp& t : n.signatures[c].outputs) layout.push_back(t[a]);
        }
        out[i * labels.axes + a] = ids.emplace(layout, static_cast<int>(ids.size())).first->second;
      }
    }
  }
  return labels;
}

std::vector<int> ToOriginal(const Restricted& r, const std::vector<int>& choice) {
  std::vector<int> out(choice.size());
  for (size_t u = 0; u < choice.size(); ++u) out[u] = r.kept[u][choice[u]];
  return out;
}

// `choice` (original indices) in `r`'s indices; empty when some pick was cut.
std::vector<int> ToRestricted(const Restricted& r, const std::vector<int>& choice) {
  std::vector<int> out(choice.size());
  for (size_t u = 0; u < choice.size(); ++u) {
    auto it = std::find(r.kept[u].begin(), r.kept[u].end(), choice[u]);
    if (it == r.kept[u].end()) return {};
    out[u] = static_cast<int>(it - r.kept[u].begin());
  }
  return out;
}

Optimality OptimalityOf(const ExactResult& e, double cap_seconds, double seconds) {
  Optimality o;
  o.cap_seconds = cap_seconds;
  o.seconds = seconds;
  o.proved = e.proved_optimal;
  o.bound_seconds = e.lower_bound;
  o.bound = e.bound;
  o.best_seconds = e.solution.total_seconds;
  return o;
}

}  // namespace

std::vector<std::string> SearcherNames() {
  std::vector<std::string> names = {"autoddl", "exact"};
  for (const std::string& p : AllPresetNames()) names.push_back(p);
  names.push_back("manual");
  return names;
}

Maybe<Strategy> PlacementsFor(const OpGraph& graph, const Placement& placement,
                              const PlanOptions& options) {
  Strategy s(placement);
  if (!options.stages.empty()) {
    OFL_RETURN_IF_ERROR(AssignStages(graph, options.stages, options.stage_boundaries, &s));
  }
  return s;
}

Maybe<std::vector<std::vector<int>>> AllowedCandidates(const OpGraph& graph, const CostModel& model,
                                                       const std::map<std::string, NdSbp>& fixed) {
  std::vector<std::vector<int>> allowed(model.nodes().size());
  if (fixed.empty()) return allowed;
  std::map<std::string, std::pair<int, int>> outputs;  // op output -> (node, index)
  for (const OpNode& op : graph.ops()) {
    for (size_t o = 0; o < op.outputs.size(); ++o) {
      outputs[op.outputs[o]] = {model.NodeOf(op.name), static_cast<int>(o)};
    }
  }
  std::map<std::string, std::pair<int, bool>> states;  // state -> (node, follows)
  for (size_t u = 0; u < model.nodes().size(); ++u) {
    for (const auto& [state, follows] : model.nodes()[u].states) {
      states[state] = {static_cast<int>(u), follows};
    }
  }
  for (const auto& [name, sbp] : fixed) {
    int node = -1, output = -1;
    bool follows = true, is_state = false;
    if (auto s = states.find(name); s != states.end()) {
      node = s->second.first;
      follows = s->second.second;
      is_state = true;
    } else if (auto o = outputs.find(name); o != outputs.end()) {
      node = o->second.first;
      output = o->second.second;
    } else if (graph.IsInput(name) || graph.IsVariable(name)) {
      node = model.NodeOf(name);
    }
    OFL_ENSURE(node >= 0, "plan: pinned tensor '", name, "' is not in the graph");
    const CostNodeInfo& n = model.nodes()[node];
    if (is_state && !follows) {
      OFL_ENSURE(sbp == NdSbp(std::vector<Sbp>(sbp.size(), Sbp::Broadcast())),
                 "plan: optimizer state '", name, "' is always B, cannot be pinned to ", sbp);
      continue;
    }
    std::vector<int> keep;
    const int k =
        static_cast<int>(n.kind == CostNodeKind::kOp ? n.signatures.size() : n.sbps.size());
    for (int c = 0; c < k; ++c) {
      const NdSbp& made = output >= 0 ? n.signatures[c].outputs[output] : n.sbps[c];
      if (made != sbp) continue;
      if (allowed[node].empty() ||
          std::find(allowed[node].begin(), allowed[node].end(), c) != allowed[node].end()) {
        keep.push_back(c);
      }
    }
    OFL_ENSURE(!keep.empty(), "plan: tensor '", name, "' cannot be ", sbp, " (",
               output >= 0 ? "no signature of op '" + n.name + "' produces it"
                           : "not a valid layout of it on " + n.placement.ToString(),
               ", or it conflicts with another pin)");
    allowed[node] = std::move(keep);
  }
  return allowed;
}

namespace {

// The chosen candidate per node under options.searcher (a known name).
Maybe<std::vector<int>> Choose(const OpGraph& graph, const CostModel& model,
                               const PlanOptions& options, PlanStats* stats) {
  const CostGraph& full = model.graph();
  if (options.searcher == "manual") {
    Strategy manual = options.manual;
    if (manual.signatures().empty() && manual.sources().empty()) {
      OFL_ASSIGN_OR_RETURN(manual,
                           DeduceStrategy(graph, model.placements().placement(), options.pinned));
    }
    return model.ChoiceOf(manual);
  }
  if (IsRulePreset(options.searcher)) return ChooseByRule(graph, model, options, stats);
  std::map<std::string, NdSbp> fixed;
  if (IsSourcePreset(options.searcher)) {
    OFL_ASSIGN_OR_RETURN(
        fixed, ExpertPresetSources(options.searcher, graph, model.placements().placement()));
    // Optimizer state follows its parameter (which a pin may override).
    for (const CostNodeInfo& n : model.nodes()) {
      for (const auto& [state, follows] : n.states) fixed.erase(state);
    }
  }
  for (const auto& [name, sbp] : options.pinned) fixed[name] = sbp;
  OFL_ASSIGN_OR_RETURN(auto allowed, AllowedCandidates(graph, model, fixed));
  OFL_ASSIGN_OR_RETURN(Restricted r, Restrict(full, allowed));
  if (r.graph().SmallestMemoryNeed() > r.graph().memory_limit()) {
    return InvalidArgument("plan ", options.searcher,
                           ": no strategy with these sources fits "
                           "device memory: it needs at least ",
                           FormatBytes(r.graph().SmallestMemoryNeed()),
                           " per device, above the "
                           "limit of ",
                           FormatBytes(r.graph().memory_limit()));
  }
  if (options.searcher == "exact") {
    ExactOptions exact = options.exact;
    if (options.exact_starts_from_autoddl) {
      // Asked for only when exact has not proved its answer by elimination:
      // the whole autoddl pipeline's answer, so an unproved exact is never
      // worse than autoddl.
      exact.start = [&]() -> Maybe<std::vector<int>> {
        PlanOptions o = options;
        o.searcher = "autoddl";
        PlanStats ignored;
        OFL_ASSIGN_OR_RETURN(std::vector<int> c, Choose(graph, model, o, &ignored));
        return ToRestricted(r, c);  // same pins: nothing is cut
      };
    }
    const auto started = std::chrono::steady_clock::now();
    OFL_ASSIGN_OR_RETURN(ExactResult e, ExactSearch(r.graph(), exact));
    stats->optimality = OptimalityOf(e, exact.time_budget_seconds, SecondsSince(started));
    stats->exact_proved = e.proved_optimal;
    stats->lower_bound = e.lower_bound;
    stats->exact_start_seconds = e.start_seconds;
    stats->pruned = e.num_pruned;
    stats->note = e.note;
    if (e.answer_is_start) {
      stats->note += std::string(stats->note.empty() ? "" : "; ") +
                     "the answer is autoddl's, which branch and bound did not improve";
    }
    return ToOriginal(r, e.solution.choice);
  }
  AutoddlOptions autoddl = options.autoddl;
  if (options.searcher == "autoddl" && options.autoddl_starts_from_presets) {
    // The cheapest applicable preset's choice, of either family, is a start.
    std::string best_name;
    std::vector<int> best;
    double best_seconds = 0;
    for (const std::string& name : AllPresetNames()) {
      PlanOptions o = options;
      o.searcher = name;
      o.autoddl.block_rounds = 0;  // a start: the main search aliases blocks
      PlanStats ignored;
      Maybe<std::vector<int>> c = Choose(graph, model, o, &ignored);
      if (!c.ok()) continue;
      const double seconds = full.TotalSeconds(c.value());
      if (best.empty() || seconds < best_seconds) {
        best_name = name;
        best = std::move(c).value();
        best_seconds = seconds;
      }
    }
    std::vector<int> start = best.empty() ? best : ToRestricted(r, best);
    if (!start.empty()) autoddl.extra_starts.push_back({"preset:" + best_name, start});
    if (!best_name.empty()) stats->note = "best expert preset: " + best_name;
  }
  if (options.searcher == "autoddl" && options.autoddl_starts_from_submeshes) {
    // One start per hierarchy axis: the best choice that replicates that
    // axis (every tensor B on it), i.e. the problem on the other axes alone.
    // (On a 1-D mesh that is no parallelism at all: no start.)
    const int64_t axes = MaxAxes(model);
    for (int64_t axis = 0; axes >= 2 && axis < axes; ++axis) {
      std::vector<std::vector<int>> keep = ReplicatingCandidates(model, axis, r.kept);
      if (keep.empty()) continue;  // some node cannot replicate the axis
      Maybe<Restricted> sub = Restrict(r.graph(), keep);
      if (!sub.ok() ||
          sub.value().graph().SmallestMemoryNeed() > sub.value().graph().memory_limit()) {
        continue;
      }
      AutoddlOptions plain = options.autoddl;
      plain.extra_starts.clear();
      // The main search aliases identical blocks; a start that did too
      // would only find the same plans again (and costs a search).
      plain.block_rounds = 0;
      Maybe<AutoddlResult> a = AutoddlSearch(sub.value().graph(), plain);
      if (!a.ok()) continue;
      autoddl.extra_starts.push_back(
          {StrCat("replicate_axis_", axis), ToOriginal(sub.value(), a.value().solution.choice)});
    }
  }
  if (options.searcher == "autoddl" && autoddl.axis_passes > 0 && autoddl.axis_labels.of.empty()) {
    autoddl.axis_labels = AxisLabelsOf(model, r.kept);
  }
  OFL_ASSIGN_OR_RETURN(AutoddlResult a, AutoddlSearch(r.graph(), autoddl));
  stats->pruned = a.num_pruned;
  stats->autoddl_start = a.starts[a.best_start].name;
  stats->autoddl_starts = a.starts;
  return ToOriginal(r, a.solution.choice);
}

// exact from `choice` (original indices) under the pins, for at most
// options.optimality_cap_seconds.
Maybe<Optimality> MeasureOptimality(const OpGraph& graph, const CostModel& model,
                                    const PlanOptions& options, const std::vector<int>& choice) {
  const auto started = std::chrono::steady_clock::now();
  OFL_ASSIGN_OR_RETURN(auto allowed, AllowedCandidates(graph, model, options.pinned));
  OFL_ASSIGN_OR_RETURN(Restricted r, Restrict(model.graph(), allowed));
  ExactOptions exact = options.exact;
  exact.time_budget_seconds = options.optimality_cap_seconds;
  std::vector<int> start = ToRestricted(r, choice);  // empty (none) if it breaks a pin
  exact.start = [start]() -> Maybe<std::vector<int>> { return start; };
  OFL_ASSIGN_OR_RETURN(ExactResult e, ExactSearch(r.graph(), exact));
  return OptimalityOf(e, exact.time_budget_seconds, SecondsSince(started));
}

}  // namespace

Maybe<PlannedStrategy> PlanWithModel(const OpGraph& graph, std::shared_ptr<const CostModel> model,
                                     const PlanOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  const std::vector<std::string> names = SearcherNames();
  if (std::find(names.begin(), names.end(), options.searcher) == names.end()) {
    std::ostringstream valid;
    for (size_t i = 0; i < names.size(); ++i) valid << (i ? ", " : "") << names[i];
    return InvalidArgument("plan: unknown searcher '", options.searcher, "'; valid: ", valid.str());
  }
  OFL_ENSURE(model != nullptr, "plan: no cost model");
  const CostGraph& full = model->graph();
  PlannedStrategy out;
  out.searcher = options.searcher;
  out.model = model;
  OFL_ASSIGN_OR_RETURN(std::vector<int> choice, Choose(graph, *model, options, &out.stats));
  OFL_ASSIGN_OR_RETURN(out.solution, full.Evaluate(choice));
  if (options.searcher != "exact" && options.optimality_cap_seconds > 0) {
    OFL_ASSIGN_OR_RETURN(out.stats.optimality, MeasureOptimality(graph, *model, options, choice));
  }
  OFL_ASSIGN_OR_RETURN(out.strategy, model->ToStrategy(choice));
  // CostModel::ToStrategy's contract: its strategies pass Validate (each
  // op's signature is one of the model's candidates, which are
  // CandidateSignatures; folded updates keep their variable's layout), and
  // the graph tests check planned strategies with it. Validate re-derives
  // every op's candidates (0.08 s of the 0.9 s plan of 96 layers on
  // [128, 8]), so only debug builds repeat it here.
  DCHECK(out.strategy.Validate(graph).ok()) << out.strategy.Validate(graph).message();
  out.stats.ops = model->stats().ops;
  out.stats.cost_nodes = full.num_nodes();
  out.stats.cost_edges = full.num_edges();
  out.stats.mean_candidates =
      full.num_nodes() == 0 ? 0.0
                            : static_cast<double>(full.num_candidates_total()) / full.num_nodes();
  int64_t op_nodes = 0, op_candidates = 0;
  for (int u = 0; u < full.num_nodes(); ++u) {
    const CostNodeInfo& n = model->nodes()[u];
    if (n.kind != CostNodeKind::kOp && n.update_op.empty()) continue;
    ++op_nodes;
    op_candidates += full.num_candidates(u);
  }
  out.stats.mean_op_candidates =
      op_nodes == 0 ? 0.0 : static_cast<double>(op_candidates) / static_cast<double>(op_nodes);
  out.stats.build_seconds = model->stats().build_seconds;
  out.stats.search_seconds = SecondsSince(start);
  out.stats.seconds = out.stats.build_seconds + out.stats.search_seconds;
  return out;
}

Maybe<PlannedStrategy> PlanStrategy(const OpGraph& graph, const Placement& placement,
                                    const Cluster& cluster, const PlanOptions& options) {
  const std::vector<std::string> names = SearcherNames();
  if (std::find(names.begin(), names.end(), options.searcher) == names.end()) {
    return PlanWithModel(graph, nullptr, options);  // the unknown-searcher error
  }
  OFL_ASSIGN_OR_RETURN(Strategy placements, PlacementsFor(graph, placement, options));
  OFL_ASSIGN_OR_RETURN(auto model,
                       BuildCostModel(graph, placements, cluster,
                                      ArrivalsFromPins(graph, options.cost, options.pinned)));
  return PlanWithModel(graph, std::move(model), options);
}

}  // namespace ofl
