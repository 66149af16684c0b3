// The "autoddl" searcher (autoddl_searcher.h).
#include "graph/searchers/autoddl_searcher.h"

#include <algorithm>
#include <map>
#include <string>
#include <utility>

#include "graph/expert_presets.h"

namespace ofl {

namespace {

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

// The cheapest applicable preset's choice, of either family (registered
// searchers, rule-based first), as a start; its name goes to stats->note.
void AddPresetStart(const SearchInput& input, const Restricted& r, AutoddlOptions* autoddl) {
  std::vector<std::string> presets = ExpertPresetNames();
  for (const std::string& p : ExpertSourcePresetNames()) presets.push_back(p);
  std::string best_name;
  std::vector<int> best;
  double best_seconds = 0;
  for (const std::string& name : presets) {
    PlanOptions o = input.options;
    o.searcher = name;
    // A start: the main search aliases blocks.
    o.searcher_options.Mutable<AutoddlSearcherOptions>().descent.block_rounds = 0;
    PlanStats ignored;
    Maybe<std::vector<int>> c = RunSearcher({input.graph, input.model, o, &ignored});
    if (!c.ok()) continue;
    const double seconds = input.model.graph().TotalSeconds(c.value());
    if (best.empty() || seconds < best_seconds) {
      best_name = name;
      best = std::move(c).value();
      best_seconds = seconds;
    }
  }
  std::vector<int> start = best.empty() ? best : ToRestricted(r, best);
  if (!start.empty()) autoddl->extra_starts.push_back({"preset:" + best_name, start});
  if (!best_name.empty()) input.stats->note = "best expert preset: " + best_name;
}

// One start per hierarchy axis: the best choice that replicates that axis
// (every tensor B on it), i.e. the problem on the other axes alone. (On a
// 1-D mesh that is no parallelism at all: no start.)
void AddSubmeshStarts(const SearchInput& input, const Restricted& r, AutoddlOptions* autoddl) {
  const int64_t axes = MaxAxes(input.model);
  for (int64_t axis = 0; axes >= 2 && axis < axes; ++axis) {
    std::vector<std::vector<int>> keep = ReplicatingCandidates(input.model, axis, r.kept);
    if (keep.empty()) continue;  // some node cannot replicate the axis
    Maybe<Restricted> sub = Restrict(r.graph(), keep);
    if (!sub.ok() ||
        sub.value().graph().SmallestMemoryNeed() > sub.value().graph().memory_limit()) {
      continue;
    }
    AutoddlOptions plain = input.options.searcher_options.Get<AutoddlSearcherOptions>().descent;
    plain.extra_starts.clear();
    // The main search aliases identical blocks; a start that did too
    // would only find the same plans again (and costs a search).
    plain.block_rounds = 0;
    Maybe<AutoddlResult> a = AutoddlSearch(sub.value().graph(), plain);
    if (!a.ok()) continue;
    autoddl->extra_starts.push_back(
        {StrCat("replicate_axis_", axis), ToOriginal(sub.value(), a.value().solution.choice)});
  }
}

class AutoddlSearcher : public Searcher {
 public:
  AutoddlSearcher()
      : Searcher("autoddl",
                 "coordinate descent over the cost graph from many starts (expert presets and "
                 "per-axis optima included), with exact moves on trees, pairs, axes and balls") {}

  Maybe<std::vector<int>> Search(const SearchInput& input) const override {
    const auto& options = input.options.searcher_options.Get<AutoddlSearcherOptions>();
    OFL_ASSIGN_OR_RETURN(Restricted r, RestrictToPins(input, {}));
    AutoddlOptions autoddl = options.descent;
    if (options.starts_from_presets) AddPresetStart(input, r, &autoddl);
    if (options.starts_from_submeshes) AddSubmeshStarts(input, r, &autoddl);
    if (autoddl.axis_passes > 0 && autoddl.axis_labels.of.empty()) {
      autoddl.axis_labels = AxisLabelsOf(input.model, r.kept);
    }
    return DescendOn(r, autoddl, input.stats);
  }
};

}  // namespace

Maybe<std::vector<int>> DescendOn(const Restricted& r, const AutoddlOptions& options,
                                  PlanStats* stats) {
  OFL_ASSIGN_OR_RETURN(AutoddlResult a, AutoddlSearch(r.graph(), options));
  stats->pruned = a.num_pruned;
  stats->autoddl_start = a.starts[a.best_start].name;
  stats->autoddl_starts = a.starts;
  return ToOriginal(r, a.solution.choice);
}

OFL_REGISTER_SEARCHER(0, std::make_shared<AutoddlSearcher>());

}  // namespace ofl
