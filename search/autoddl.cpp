// AutoDDL search: the starts, coordinate descent, and the best of them.
#include "search/autoddl.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <numeric>
#include <random>

#include "search/ball_descent.h"
#include "search/block_alias.h"
#include "search/dominance.h"
#include "search/elimination.h"
#include "search/pair_descent.h"
#include "search/tree_descent.h"

namespace ofl {

std::vector<BallOptions> DefaultBallTiers() {
  return {BallOptions{/*radius=*/3, /*max_nodes=*/16, /*max_entries=*/int64_t{1} << 16,
                      /*lagrangian_iterations=*/16, /*budget=*/int64_t{1} << 20},
          BallOptions{}};
}

namespace {

bool Improves(double candidate, double current) { return candidate < current - 1e-12 * current; }

int64_t Memory(const CostGraph& graph, int node, int candidate) {
  return graph.node(node).candidates[candidate].memory_bytes;
}

// Every candidate's compute plus the transfer of the edges to neighbours in
// `choice` (all of them, or those before `node` when `earlier_only`).
void LocalCosts(const CostGraph& graph, int node, const std::vector<int>& choice, bool earlier_only,
                std::vector<double>& out) {
  const std::vector<Candidate>& cands = graph.node(node).candidates;
  int k = cands.size();
  out.resize(k);
  for (int c = 0; c < k; ++c) out[c] = cands[c].compute_seconds;
  for (const Incidence& inc : graph.incident(node)) {
    if (earlier_only && inc.neighbour > node) continue;
    const EdgeMatrix& m = *graph.edge(inc.edge).matrix;
    int y = choice[inc.neighbour];
    if (!inc.outgoing) {
      const double* row = m.row(y);
      for (int c = 0; c < k; ++c) out[c] += row[c];
    } else {
      for (int c = 0; c < k; ++c) out[c] += m.at(c, y);
    }
  }
}

// suffix[i]: the least memory nodes i.. can take.
std::vector<int64_t> MemorySuffix(const CostGraph& graph) {
  std::vector<int64_t> suffix(graph.num_nodes() + 1, 0);
  for (int u = graph.num_nodes() - 1; u >= 0; --u) {
    suffix[u] = suffix[u + 1] + graph.node(u).min_memory_bytes;
  }
  return suffix;
}

// In index order: the cheapest candidate (counting edges to earlier nodes)
// that leaves room for the rest; with `rng`, a random one of those instead.
std::vector<int> SequentialStart(const CostGraph& graph, std::mt19937_64* rng) {
  std::vector<int64_t> suffix = MemorySuffix(graph);
  std::vector<int> choice(graph.num_nodes(), 0);
  std::vector<double> local;
  int64_t used = 0;
  for (int u = 0; u < graph.num_nodes(); ++u) {
    LocalCosts(graph, u, choice, /*earlier_only=*/true, local);
    std::vector<int> fits;
    for (int c = 0; c < graph.num_candidates(u); ++c) {
      if (used + Memory(graph, u, c) + suffix[u + 1] <= graph.memory_limit()) fits.push_back(c);
    }
    CHECK(!fits.empty()) << "the memory limit was checked feasible";
    int pick = rng != nullptr ? fits[(*rng)() % fits.size()]
                              : *std::min_element(fits.begin(), fits.end(), [&](int a, int b) {
                                  return local[a] < local[b];
                                });
    choice[u] = pick;
    used += Memory(graph, u, pick);
  }
  return choice;
}

std::vector<int> MinMemoryStart(const CostGraph& graph) {
  std::vector<int> choice(graph.num_nodes());
  for (int u = 0; u < graph.num_nodes(); ++u) {
    const std::vector<Candidate>& cands = graph.node(u).candidates;
    choice[u] = std::min_element(cands.begin(), cands.end(),
                                 [](const Candidate& a, const Candidate& b) {
                                   return std::make_pair(a.memory_bytes, a.compute_seconds) <
                                          std::make_pair(b.memory_bytes, b.compute_seconds);
                                 }) -
                cands.begin();
  }
  return choice;
}

// Kruskal on the matrices' spreads (max - min), largest first.
std::vector<char> MaxSpanningForest(const CostGraph& graph) {
  std::vector<int> edges(graph.num_edges());
  std::iota(edges.begin(), edges.end(), 0);
  auto spread = [&](int e) { return graph.edge(e).matrix->max() - graph.edge(e).matrix->min(); };
  std::stable_sort(edges.begin(), edges.end(), [&](int a, int b) { return spread(a) > spread(b); });
  std::vector<int> parent(graph.num_nodes());
  std::iota(parent.begin(), parent.end(), 0);
  auto root = [&](int u) {
    while (parent[u] != u) u = parent[u] = parent[parent[u]];
    return u;
  };
  std::vector<char> use(graph.num_edges(), 0);
  for (int e : edges) {
    int a = root(graph.edge(e).from), b = root(graph.edge(e).to);
    if (a == b) continue;
    parent[a] = b;
    use[e] = 1;
  }
  return use;
}

std::vector<int> SpanningTreeStart(const CostGraph& graph, int iterations) {
  int64_t max_entries = std::numeric_limits<int64_t>::max();
  Maybe<EliminationPlan> made =
      EliminationPlan::Make(graph, MaxSpanningForest(graph), max_entries, max_entries);
  if (!made.ok()) return MinMemoryStart(graph);  // over 65535 candidates at a node
  std::vector<int> choice = LagrangianSolve(graph, made.value(), iterations);
  return choice.empty() ? MinMemoryStart(graph) : choice;
}

// Variable elimination over the whole graph when its tables stay within
// `max_entries` in all (empty otherwise): "exact when cheap". Without a
// binding memory limit it is the optimum; under one, the best answer the
// Lagrangian bisection finds.
std::vector<int> EliminationStart(const CostGraph& graph, int64_t max_entries, int iterations) {
  if (max_entries <= 0) return {};
  Maybe<EliminationPlan> made = EliminationPlan::Make(graph, {}, max_entries, max_entries);
  if (!made.ok()) return {};
  return LagrangianSolve(graph, made.value(), iterations);
}

// Single-node sweeps as CoordinateDescent, remembering between runs what
// each node last saw: the memory the other nodes used at its last visit,
// and (by comparing with the choice the last run ended at) whether it or a
// neighbour changed since. A node neither changed around nor given more room
// than at its last visit would not move, so the first sweep of a run skips
// it: the moves, their order and the answer are CoordinateDescent's, without
// a full sweep after every tree or pair pass that moved a few nodes.
class Sweeps {
 public:
  explicit Sweeps(const CostGraph& graph)
      : graph_(graph), dirty_(graph.num_nodes(), 1), others_(graph.num_nodes(), 0) {}

  // Forgets what the nodes saw (before a new start).
  void Reset() {
    std::fill(dirty_.begin(), dirty_.end(), 1);
    last_.clear();
  }

  // Returns the sweeps run; counts the moves.
  int Run(std::vector<int>& choice, int max_sweeps, int64_t* moves) {
    const int n = graph_.num_nodes();
    if (last_.empty()) {
      std::fill(dirty_.begin(), dirty_.end(), 1);
    } else {
      for (int u = 0; u < n; ++u) {
        if (choice[u] == last_[u]) continue;
        dirty_[u] = 1;
        for (const Incidence& inc : graph_.incident(u)) dirty_[inc.neighbour] = 1;
      }
    }
    const int64_t limit = graph_.memory_limit();
    int64_t used = graph_.MemoryBytes(choice);
    CHECK_LE(used, limit) << "coordinate descent starts from a feasible choice";
    int sweeps = 0;
    while (sweeps < max_sweeps) {
      ++sweeps;
      bool changed = false;
      for (int u = 0; u < n; ++u) {
        const int current = choice[u];
        const int64_t others = used - Memory(graph_, u, current);
        // More room than at its last visit (sweeps after the first skip that too).
        const bool roomier = sweeps == 1 && limit != kNoMemoryLimit && others < others_[u];
        if (!dirty_[u] && !roomier) continue;
        dirty_[u] = 0;
        others_[u] = others;
        LocalCosts(graph_, u, choice, /*earlier_only=*/false, local_);
        int best = current;
        const int64_t room = limit - others;
        for (int c = 0; c < graph_.num_candidates(u); ++c) {
          if (local_[c] < local_[best] && Memory(graph_, u, c) <= room) best = c;
        }
        if (best == current || !Improves(local_[best], local_[current])) continue;
        used += Memory(graph_, u, best) - Memory(graph_, u, current);
        choice[u] = best;
        changed = true;
        if (moves != nullptr) ++*moves;
        for (const Incidence& inc : graph_.incident(u)) dirty_[inc.neighbour] = 1;
      }
      if (!changed) break;
    }
    last_ = choice;
    return sweeps;
  }

 private:
  const CostGraph& graph_;
  std::vector<char> dirty_;      // it or a neighbour moved since its last visit
  std::vector<int64_t> others_;  // per node: the others' memory at its last visit
  std::vector<int> last_;        // the choice the last run ended at; empty: none yet
  std::vector<double> local_;
};

// The moves of a descent over one graph, and what they remember.
struct Descent {
  explicit Descent(const CostGraph& g) : graph(g), sweeps(g), trees(g), pairs(g) {}

  // Before a new start.
  void Restart() {
    sweeps.Reset();
    trees.Reset();
    pairs.Reset();
  }

  // Rounds of a tree pass and a pair pass, each round that moved followed by
  // single-node sweeps, until two rounds in a row move nothing.
  void Rounds(std::vector<int>& choice, const AutoddlOptions& options, AutoddlStart* report) {
    int64_t ignored = 0;
    int64_t* moves = report != nullptr ? &report->moves : &ignored;
    for (int pass = 0, idle = 0; pass < options.max_tree_passes && idle < 2; ++pass) {
      int moved = trees.Pass(choice);
      if (report != nullptr) report->tree_moves += moved;
      if (options.pair_moves) {
        int paired = pairs.Pass(choice);
        if (report != nullptr) report->pair_moves += paired;
        moved += paired;
      }
      idle = moved == 0 ? idle + 1 : 0;
      if (moved == 0) continue;
      int swept = sweeps.Run(choice, options.max_sweeps, moves);
      if (report != nullptr) report->sweeps += swept;
    }
  }

  // Axis moves (when `axes` is set), each pass that moved followed by
  // sweeps and rounds again, at most options.axis_passes passes.
  void AxisRounds(std::vector<int>& choice, const AutoddlOptions& options, AutoddlStart* report,
                  int64_t* axis_moves) {
    for (int pass = 0; axes != nullptr && pass < options.axis_passes; ++pass) {
      int moved = axes->Pass(choice);
      *axis_moves += moved;
      if (moved == 0) break;
      int64_t ignored = 0;
      sweeps.Run(choice, options.max_sweeps, report != nullptr ? &report->moves : &ignored);
      Rounds(choice, options, report);
    }
  }

  const CostGraph& graph;
  Sweeps sweeps;
  TreeDescent trees;
  PairDescent pairs;
  std::unique_ptr<AxisDescent> axes;  // null: no axis moves
};

std::unique_ptr<AxisDescent> MakeAxes(const CostGraph& graph, AxisLabels labels,
                                      const AutoddlOptions& options) {
  return std::make_unique<AxisDescent>(graph, std::move(labels), options.axis_max_entries,
                                       options.lagrangian_iterations, options.axis_free_nodes);
}

// Each start of the caller: one valid candidate per node, within the limit.
Status CheckExtraStarts(const CostGraph& graph, const NamedChoices& extra_starts) {
  for (const auto& [name, choice] : extra_starts) {
    OFL_ENSURE(choice.size() == static_cast<size_t>(graph.num_nodes()), "autoddl: start '", name,
               "' has ", choice.size(), " candidates for ", graph.num_nodes(), " nodes");
    for (int u = 0; u < graph.num_nodes(); ++u) {
      OFL_ENSURE(choice[u] >= 0 && choice[u] < graph.num_candidates(u), "autoddl: start '", name,
                 "' picks candidate ", choice[u], " of node '", graph.node(u).name, "' (",
                 graph.num_candidates(u), " candidates)");
    }
    OFL_ENSURE(graph.MemoryBytes(choice) <= graph.memory_limit(), "autoddl: start '", name,
               "' needs ", FormatBytes(graph.MemoryBytes(choice)), " per device, above the limit ",
               FormatBytes(graph.memory_limit()));
  }
  return Status::OK();
}

}  // namespace

int CoordinateDescent(const CostGraph& graph, std::vector<int>& choice, int max_sweeps,
                      int64_t* moves) {
  int n = graph.num_nodes();
  int64_t limit = graph.memory_limit();
  int64_t used = graph.MemoryBytes(choice);
  CHECK_LE(used, limit) << "coordinate descent starts from a feasible choice";
  std::vector<char> dirty(n, 1);  // a neighbour moved since the node's last visit
  std::vector<double> local;
  int sweeps = 0;
  while (sweeps < max_sweeps) {
    ++sweeps;
    bool changed = false;
    for (int u = 0; u < n; ++u) {
      if (!dirty[u]) continue;
      dirty[u] = 0;
      LocalCosts(graph, u, choice, /*earlier_only=*/false, local);
      int current = choice[u], best = current;
      int64_t room = limit - (used - Memory(graph, u, current));
      for (int c = 0; c < graph.num_candidates(u); ++c) {
        if (local[c] < local[best] && Memory(graph, u, c) <= room) best = c;
      }
      if (best == current || !Improves(local[best], local[current])) continue;
      used += Memory(graph, u, best) - Memory(graph, u, current);
      choice[u] = best;
      changed = true;
      if (moves != nullptr) ++*moves;
      for (const Incidence& inc : graph.incident(u)) dirty[inc.neighbour] = 1;
    }
    if (!changed) break;
  }
  return sweeps;
}

Maybe<AutoddlResult> AutoddlSearch(const CostGraph& graph, const AutoddlOptions& options) {
  OFL_RETURN_IF_ERROR(graph.CheckMemoryFeasible());
  OFL_RETURN_IF_ERROR(CheckExtraStarts(graph, options.extra_starts));
  PrunedGraph pruned = options.prune_dominated ? PruneDominated(graph) : PruneNothing(graph);
  const CostGraph& g = pruned.graph;
  std::vector<std::pair<std::string, std::vector<int>>> starts;
  starts.emplace_back("spanning_tree", SpanningTreeStart(g, options.lagrangian_iterations));
  starts.emplace_back("greedy", SequentialStart(g, nullptr));
  starts.emplace_back("min_memory", MinMemoryStart(g));
  std::mt19937_64 rng(options.seed);
  for (int i = 0; i < options.num_random_starts; ++i) {
    starts.emplace_back(StrCat("random_", i), SequentialStart(g, &rng));
  }
  // Extra starts run on the pruned graph when none of their candidates was
  // pruned (mapped to its indices), else on the original graph.
  std::vector<bool> on_original(starts.size(), false);
  for (const auto& [name, choice] : options.extra_starts) {
    std::vector<int> mapped(choice.size());
    bool kept = true;
    for (size_t u = 0; u < choice.size() && kept; ++u) {
      const std::vector<int>& k = pruned.kept[u];
      auto it = std::find(k.begin(), k.end(), choice[u]);
      kept = it != k.end();
      if (kept) mapped[u] = static_cast<int>(it - k.begin());
    }
    starts.emplace_back(name, kept ? mapped : choice);
    on_original.push_back(!kept);
  }
  const bool axis_moves = options.axis_passes > 0 && options.axis_labels.usable(graph);
  const AxisLabels labels = axis_moves ? options.axis_labels.Restricted(pruned.kept) : AxisLabels{};
  AutoddlResult result;
  int blocks_start = -1;  // its index in `starts`
  if (options.block_rounds > 0) {
    NamedChoices given;  // the caller's starts that run on the pruned graph
    for (size_t s = starts.size() - options.extra_starts.size(); s < starts.size(); ++s) {
      if (!on_original[s]) given.push_back(starts[s]);
    }
    std::vector<int> lifted = BlocksStart(g, labels, options, given, &result.aliased_nodes);
    if (!lifted.empty()) {
      blocks_start = static_cast<int>(starts.size());
      starts.emplace_back("blocks", std::move(lifted));
      on_original.push_back(false);
    }
  }
  std::vector<int> eliminated =
      EliminationStart(g, options.elimination_max_entries, options.lagrangian_iterations);
  if (!eliminated.empty()) {
    starts.emplace_back("elimination", std::move(eliminated));
    on_original.push_back(false);
  }
  result.num_pruned = pruned.num_pruned;
  Descent on_pruned(g);
  if (axis_moves) {
    on_pruned.axes = MakeAxes(g, labels, options);
  }
  std::unique_ptr<Descent> on_given;  // for extra starts with a pruned candidate
  for (size_t s = 0; s < starts.size(); ++s) {
    auto& [name, choice] = starts[s];
    const bool extra = on_original[s];
    if (extra && on_given == nullptr) {
      on_given = std::make_unique<Descent>(graph);
      if (axis_moves) {
        on_given->axes = MakeAxes(graph, options.axis_labels, options);
      }
    }
    Descent& d = extra ? *on_given : on_pruned;
    AutoddlStart report;
    report.name = name;
    report.start_seconds = d.graph.TotalSeconds(choice);
    d.Restart();
    report.sweeps = d.sweeps.Run(choice, options.max_sweeps, &report.moves);
    d.Rounds(choice, options, &report);
    report.final_seconds = d.graph.TotalSeconds(choice);
    if (result.starts.empty() ||
        report.final_seconds < result.starts[result.best_start].final_seconds) {
      result.best_start = result.starts.size();
    }
    result.starts.push_back(report);
  }
  if (axis_moves) {
    // Axis moves from the `axis_starts` best answers (ties: the earlier
    // start) within `axis_start_slack` of the best; the best may change.
    std::vector<int> order(result.starts.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
      return result.starts[a].final_seconds < result.starts[b].final_seconds;
    });
    const double best_final = result.starts[order[0]].final_seconds;
    // The "blocks" start takes no slot, so adding it takes axis moves from
    // none of the others; it gets them only when its answer is the best.
    for (int i = 0, taken = 0; taken < options.axis_starts && i < static_cast<int>(order.size());
         ++i) {
      const int s = order[i];
      if (result.starts[s].final_seconds > best_final * (1 + options.axis_start_slack)) break;
      if (s == blocks_start && i > 0) continue;
      if (s != blocks_start) ++taken;
      Descent& d = on_original[s] ? *on_given : on_pruned;
      AutoddlStart& report = result.starts[s];
      d.Restart();
      d.AxisRounds(starts[s].second, options, &report, &result.axis_moves);
      report.final_seconds = d.graph.TotalSeconds(starts[s].second);
    }
    for (size_t s = 0; s < result.starts.size(); ++s) {
      if (result.starts[s].final_seconds < result.starts[result.best_start].final_seconds) {
        result.best_start = s;
      }
    }
  }
  // Polish the best answer with ball passes (ball_descent.h), each round
  // followed by the tree, pair and single-node moves again.
  const bool extra = on_original[result.best_start];
  Descent& d = extra ? *on_given : on_pruned;
  std::vector<int>& choice = starts[result.best_start].second;
  d.sweeps.Reset();  // it last followed another start
  auto descend = [&] {
    d.sweeps.Run(choice, options.max_sweeps, nullptr);
    d.trees.Reset();
    d.pairs.Reset();
    d.Rounds(choice, options, nullptr);
  };
  for (const BallOptions& tier :
       options.ball_passes > 0 ? options.ball_tiers : std::vector<BallOptions>{}) {
    BallDescent balls(d.graph, tier);
    for (int pass = 0; pass < options.ball_passes; ++pass) {
      int moved = balls.Pass(choice);
      result.ball_moves += moved;
      if (moved == 0) break;
      descend();
    }
  }
  OFL_ASSIGN_OR_RETURN(result.solution, graph.Evaluate(extra ? choice : pruned.ToOriginal(choice)));
  return result;
}

}  // namespace ofl
