// Exact search: elimination, the Lagrangian bound, and branch and bound.
#include "search/exact.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <deque>
#include <functional>
#include <limits>
#include <numeric>

#include "search/dominance.h"
#include "search/elimination.h"
#include "search/lagrangian_branch.h"

namespace ofl {
namespace {

constexpr double kProofTolerance = 1e-9;
constexpr char kLagrangianBound[] = "Lagrangian bound on memory";

bool GapClosed(double upper, double lower) {
  return upper <= lower + kProofTolerance * std::max(std::fabs(upper), 1e-300);
}

// Depth-first branch and bound; see exact.h, step 4b.
class BranchAndBound {
 public:
  // `weight` >= 0: seconds per byte of memory for the second bound (0: off).
  BranchAndBound(const CostGraph& graph, int64_t budget, double time_budget_seconds,
                 double weight = 0)
      : graph_(graph), budget_(budget), time_budget_seconds_(time_budget_seconds), weight_(weight) {
    int n = graph.num_nodes();
    std::vector<int> position(n, -1);
    for (int s = 0; s < n; ++s) {  // breadth-first order, components by index
      if (position[s] >= 0) continue;
      std::deque<int> queue{s};
      position[s] = order_.size();
      order_.push_back(s);
      while (!queue.empty()) {
        int u = queue.front();
        queue.pop_front();
        for (const Incidence& inc : graph.incident(u)) {
          if (position[inc.neighbour] >= 0) continue;
          position[inc.neighbour] = order_.size();
          order_.push_back(inc.neighbour);
          queue.push_back(inc.neighbour);
        }
      }
    }
    partial_.resize(n);
    later_.resize(n);
    for (int u = 0; u < n; ++u) {
      for (const Candidate& c : graph.node(u).candidates) partial_[u].push_back(c.compute_seconds);
    }
    for (int u = 0; u < n; ++u) {
      for (const Incidence& inc : graph.incident(u)) {
        if (position[inc.neighbour] < position[u]) continue;
        Later later{inc, inc.neighbour, {}};
        for (int y = 0; y < graph.num_candidates(inc.neighbour); ++y) {
          double least = std::numeric_limits<double>::infinity();
          for (int c = 0; c < graph.num_candidates(u); ++c) {
            least = std::min(least, graph.EdgeSeconds(inc, c, y));
          }
          later.least.push_back(least);
          partial_[inc.neighbour][y] += least;
        }
        later_[u].push_back(std::move(later));
      }
    }
    bound_.resize(n);
    weighted_.resize(n);
    for (int u = 0; u < n; ++u) {
      bound_[u] = *std::min_element(partial_[u].begin(), partial_[u].end());
      rest_ += bound_[u];
      weighted_[u] = WeightedMin(u);
      weighted_rest_ += weighted_[u];
    }
    root_bound_ = std::max(rest_, weighted_rest_ - weight_ * Limit());
    memory_suffix_.assign(n + 1, 0);
    for (int d = n - 1; d >= 0; --d) {
      memory_suffix_[d] = memory_suffix_[d + 1] + graph.node(order_[d]).min_memory_bytes;
    }
    choice_.assign(n, 0);
  }

  // Searches for anything cheaper than `best`; true when it finished.
  bool Run(std::vector<int>& best, double& best_cost) {
    best_ = &best;
    best_cost_ = &best_cost;
    Visit(0, 0, 0);
    return !aborted_;
  }
  int64_t nodes() const { return nodes_; }
  // A lower bound on every assignment within the limit: each node's
  // cheapest candidate against its earlier neighbours' least edge entries,
  // memory ignored or (weight > 0) priced at `weight` with the limit's
  // worth taken off, whichever is higher.
  double root_bound() const { return root_bound_; }

 private:
  struct Later {
    Incidence incidence;        // seen from the earlier node
    int node;                   // the later node
    std::vector<double> least;  // per later candidate: the edge's least time
  };

  bool OverTime() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count() >
           time_budget_seconds_;
  }

  bool Prunes(double bound) const { return bound >= *best_cost_ - 1e-12 * *best_cost_; }

  double Limit() const {
    return graph_.memory_limit() == kNoMemoryLimit ? 0.0
                                                   : static_cast<double>(graph_.memory_limit());
  }

  // min over u's candidates of partial cost + weight x memory.
  double WeightedMin(int u) const {
    if (weight_ <= 0) return 0;
    double least = std::numeric_limits<double>::infinity();
    const std::vector<Candidate>& c = graph_.node(u).candidates;
    for (size_t y = 0; y < c.size(); ++y) {
      least = std::min(least, partial_[u][y] + weight_ * static_cast<double>(c[y].memory_bytes));
    }
    return least;
  }

  // For any assignment within the limit, cost >= cost + weight (memory -
  // limit): the cost so far, the used memory priced, each unassigned node's
  // weighted minimum, less the limit's worth. 0 when off.
  double WeightedBound(double cost, int64_t used) const {
    if (weight_ <= 0) return 0;
    return cost + weight_ * (static_cast<double>(used) - Limit()) + weighted_rest_;
  }

  void Visit(int depth, double cost, int64_t used) {
    if (++nodes_ > budget_ || (time_budget_seconds_ > 0 && nodes_ % 4096 == 0 && OverTime())) {
      aborted_ = true;
      return;
    }
    if (depth == static_cast<int>(order_.size())) {
      if (cost < *best_cost_) {
        *best_cost_ = cost;
        *best_ = choice_;
      }
      return;
    }
    int j = order_[depth];
    double rest_on_entry = rest_;  // restored exactly, so no rounding drifts in
    double weighted_on_entry = weighted_rest_;
    rest_ -= bound_[j];
    weighted_rest_ -= weighted_[j];
    std::vector<int> cands(graph_.num_candidates(j));
    std::iota(cands.begin(), cands.end(), 0);
    std::stable_sort(cands.begin(), cands.end(),
                     [&](int a, int b) { return partial_[j][a] < partial_[j][b]; });
    for (int c : cands) {
      int64_t memory = graph_.node(j).candidates[c].memory_bytes;
      if (used + memory + memory_suffix_[depth + 1] > graph_.memory_limit()) continue;
      double here = cost + partial_[j][c];
      if (Prunes(here + rest_)) break;  // candidates are sorted by partial cost
      size_t mark = saved_.size();
      double rest_before = rest_, weighted_before = weighted_rest_;
      for (const Later& l : later_[j]) Apply(l, c);
      choice_[j] = c;
      if (!Prunes(here + rest_) && !(weight_ > 0 && Prunes(WeightedBound(here, used + memory)))) {
        Visit(depth + 1, here, used + memory);
      }
      for (auto it = later_[j].rbegin(); it != later_[j].rend(); ++it) Undo(*it);
      CHECK_EQ(saved_.size(), mark);
      rest_ = rest_before;
      weighted_rest_ = weighted_before;
      if (aborted_) break;
    }
    rest_ = rest_on_entry;
    weighted_rest_ = weighted_on_entry;
  }

  // The later node's partial costs use the earlier node's real choice `c`.
  void Apply(const Later& l, int c) {
    std::vector<double>& p = partial_[l.node];
    saved_.insert(saved_.end(), p.begin(), p.end());
    saved_.push_back(weighted_[l.node]);
    saved_.push_back(bound_[l.node]);
    for (size_t y = 0; y < p.size(); ++y)
      p[y] += graph_.EdgeSeconds(l.incidence, c, y) - l.least[y];
    double bound = *std::min_element(p.begin(), p.end());
    rest_ += bound - bound_[l.node];
    bound_[l.node] = bound;
    double weighted = WeightedMin(l.node);
    weighted_rest_ += weighted - weighted_[l.node];
    weighted_[l.node] = weighted;
  }

  void Undo(const Later& l) {
    std::vector<double>& p = partial_[l.node];
    double bound = saved_.back();
    saved_.pop_back();
    weighted_[l.node] = saved_.back();
    saved_.pop_back();
    std::copy(saved_.end() - p.size(), saved_.end(), p.begin());
    saved_.resize(saved_.size() - p.size());
    bound_[l.node] = bound;
  }

  const CostGraph& graph_;
  int64_t budget_;
  double time_budget_seconds_;
  double weight_;  // seconds per byte in the weighted bound; 0: off
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::vector<int> order_;
  std::vector<std::vector<double>> partial_;  // exact against assigned earlier neighbours
  std::vector<std::vector<Later>> later_;
  std::vector<double> bound_;     // min of partial_ per node
  double rest_ = 0;               // sum of bound_ over unassigned nodes
  std::vector<double> weighted_;  // min of partial_ + weight x memory per node
  double weighted_rest_ = 0;      // sum of weighted_ over unassigned nodes
  double root_bound_ = 0;
  std::vector<int64_t> memory_suffix_;
  std::vector<double> saved_;
  std::vector<int> choice_;
  std::vector<int>* best_ = nullptr;
  double* best_cost_ = nullptr;
  int64_t nodes_ = 0;
  bool aborted_ = false;
};

}  // namespace

namespace {

// The best answer and bound so far, over the pruned graph.
struct Incumbent {
  const CostGraph* graph;
  std::vector<int> choice;
  double cost = std::numeric_limits<double>::infinity();
  double lower = 0;                             // costs are >= 0
  const char* bound = "zero (costs are >= 0)";  // what gave `lower`
  double weight = 0;                            // the memory weight of the best Lagrangian bound

  void Raise(double value, const char* name) {
    if (value > lower) lower = value, bound = name;
  }

  void Offer(const std::vector<int>& x) {
    if (graph->MemoryBytes(x) > graph->memory_limit()) return;
    double c = graph->TotalSeconds(x);
    if (c < cost) {
      cost = c;
      choice = x;
    }
  }
  bool Closed() const { return std::isfinite(cost) && GapClosed(cost, lower); }
};

// The root's Lagrangian dual by line crossing from the weight-0 optimum `x`
// (over the limit): its bound raises the lower bound, its answer within the
// limit (polished by coordinate descent) is offered. Returns the dual, for
// branch and bound.
DualAnswer Lagrangian(const EliminationPlan& plan, const std::vector<int>& x, int iterations,
                      Incumbent& best, const std::function<bool()>& over_time) {
  const CostGraph& g = *best.graph;
  DualLine over{x, g.TotalSeconds(x), g.MemoryBytes(x)};
  DualAnswer dual = LagrangianRootDual(g, plan, &over, iterations, over_time);
  const double lower = best.lower;
  best.Raise(dual.bound, kLagrangianBound);
  if (best.lower > lower) best.weight = dual.weight;
  if (!dual.fit.choice.empty() && g.MemoryBytes(dual.fit.choice) <= g.memory_limit()) {
    std::vector<int> polished = dual.fit.choice;
    best.Offer(polished);
    CoordinateDescent(g, polished, 1000, nullptr);
    best.Offer(polished);
  }
  return dual;
}

// options.start's answer over the original graph, checked; empty: none.
Maybe<std::vector<int>> CheckedStart(const CostGraph& graph, const ExactOptions& options) {
  OFL_ASSIGN_OR_RETURN(std::vector<int> x, options.start());
  if (x.empty()) return x;
  OFL_ASSIGN_OR_RETURN(Solution s, graph.Evaluate(x));  // wrong length, unknown candidate
  OFL_ENSURE(s.fits_memory, "exact: the start needs ", FormatBytes(s.memory_bytes),
             " per device, above the limit of ", FormatBytes(graph.memory_limit()));
  return x;
}

// `choice` (original indices) over the pruned graph; empty when a pick was pruned.
std::vector<int> ToPruned(const PrunedGraph& pruned, const std::vector<int>& choice) {
  std::vector<int> out(choice.size());
  for (size_t u = 0; u < choice.size(); ++u) {
    const std::vector<int>& kept = pruned.kept[u];
    auto it = std::find(kept.begin(), kept.end(), choice[u]);
    if (it == kept.end()) return {};
    out[u] = static_cast<int>(it - kept.begin());
  }
  return out;
}

// Lagrangian branch and bound (lagrangian_branch.h) below `incumbent`, from
// the root's dual; true when it finished (the incumbent is then proved).
bool BranchOnDual(const EliminationPlan& plan, const DualAnswer& root, const ExactOptions& options,
                  const std::function<bool()>& over_time, Incumbent& best, double& incumbent,
                  ExactResult& result) {
  LagrangianBranchOptions o;
  o.max_nodes = options.max_lagrangian_branch_nodes;
  o.max_dual_solves = options.lagrangian_iterations;
  o.stop = over_time;
  std::vector<int> found;  // set only when strictly cheaper than `incumbent`
  LagrangianBranchResult r = LagrangianBranch(*best.graph, plan, root, found, incumbent, o);
  if (!found.empty()) best.choice = std::move(found), best.cost = incumbent;
  result.lagrangian_nodes = r.nodes;
  result.method += " + Lagrangian branch and bound";
  if (r.finished) {
    best.lower = incumbent;
    best.bound = "Lagrangian branch and bound (finished)";
    return true;
  }
  best.Raise(r.lower_bound, "Lagrangian branch and bound (open subproblems)");
  if (!result.note.empty()) result.note += "; ";
  result.note +=
      StrCat("Lagrangian branch and bound stopped after ", r.nodes, " subproblems (", r.solves,
             " eliminations; max_lagrangian_branch_nodes or "
             "time_budget_seconds), lower bound ",
             FormatSeconds(r.lower_bound));
  return GapClosed(incumbent, best.lower);
}

// Depth-first branch and bound (exact.h, step 4b) below `incumbent`, within
// `left` seconds (0: no limit); true when it finished.
bool PlainBranchAndBound(const ExactOptions& options, double left, Incumbent& best,
                         double& incumbent, ExactResult& result) {
  if (!options.weighted_branch_bound) best.weight = 0;
  BranchAndBound search(*best.graph, options.max_branch_nodes, left, best.weight);
  best.Raise(search.root_bound(), best.weight > 0 ? "branch-and-bound root bound (memory at the "
                                                    "Lagrangian weight)"
                                                  : "branch-and-bound root bound (memory ignored)");
  std::vector<int> found;  // set only when strictly cheaper than `incumbent`
  bool finished = search.Run(found, incumbent);
  if (!found.empty()) {
    best.choice = std::move(found);
    best.cost = incumbent;
  }
  result.branch_nodes = search.nodes();
  result.method += " + branch and bound";
  if (finished) {
    best.lower = incumbent;
    best.bound = "branch and bound (finished)";
    return true;
  }
  if (!result.note.empty()) result.note += "; ";
  result.note += StrCat("branch and bound stopped after ", search.nodes(),
                        " nodes (max_branch_nodes or time_budget_seconds), lower bound ",
                        FormatSeconds(best.lower), ", best ", FormatSeconds(incumbent));
  return false;
}

}  // namespace

Maybe<ExactResult> ExactSearch(const CostGraph& graph, const ExactOptions& options) {
  OFL_RETURN_IF_ERROR(graph.CheckMemoryFeasible());
  // time_budget_seconds bounds the Lagrangian dual (each solve of a
  // wide elimination can take seconds) and then branch and bound, together.
  const auto started = std::chrono::steady_clock::now();
  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  };
  auto over_time = [&] {
    return options.time_budget_seconds > 0 && elapsed() > options.time_budget_seconds;
  };
  PrunedGraph pruned = options.prune_dominated ? PruneDominated(graph) : PruneNothing(graph);
  const CostGraph& g = pruned.graph;
  ExactResult result;
  result.num_pruned = pruned.num_pruned;
  Incumbent best{&g, {}};
  // The caller's start, over the original graph: it may pick a pruned
  // candidate, so it is kept beside `best` rather than in it.
  std::vector<int> start;
  double start_cost = std::numeric_limits<double>::infinity();
  auto ask_start = [&]() -> Status {
    OFL_ASSIGN_OR_RETURN(start, CheckedStart(graph, options));
    if (start.empty()) return Status::OK();
    start_cost = graph.TotalSeconds(start);
    result.start_seconds = start_cost;
    std::vector<int> mapped = ToPruned(pruned, start);
    if (!mapped.empty()) best.Offer(mapped);
    return Status::OK();
  };
  bool proved = false;
  DualAnswer root;  // the Lagrangian dual, when memory binds
  Maybe<EliminationPlan> plan =
      EliminationPlan::Make(g, {}, options.max_table_entries, options.max_total_entries);
  double objective = 0;
  std::vector<int> x;
  if (plan.ok()) x = plan.value().Solve(0, &objective, over_time);
  if (plan.ok() && x.empty() && g.num_nodes() > 0) {  // the cap came first
    result.largest_table = plan.value().largest_table();
    result.width = plan.value().width();
    plan = Unimplemented("elimination stopped at the time budget (", options.time_budget_seconds,
                         " s) before it finished");
  }
  if (plan.ok()) {
    result.largest_table = plan.value().largest_table();
    result.width = plan.value().width();
    best.Raise(objective, "elimination without the memory limit");
    best.Offer(x);
    result.method = "elimination";
    proved = best.Closed();
    if (!proved) {
      result.method = "elimination + Lagrangian bound on memory";
      root = Lagrangian(plan.value(), x, options.lagrangian_iterations, best, over_time);
      proved = best.Closed();
    }
    if (!proved && options.start) OFL_RETURN_IF_ERROR(ask_start());
  } else {
    result.note = plan.status().message();
    if (options.start) OFL_RETURN_IF_ERROR(ask_start());
    result.method = start.empty() ? "autoddl start" : "caller's start";
    if (start.empty()) {
      AutoddlOptions own = options.autoddl;
      own.prune_dominated = false;  // already pruned
      OFL_ASSIGN_OR_RETURN(AutoddlResult a, AutoddlSearch(g, own));
      best.Offer(a.solution.choice);
    }
  }
  double incumbent = std::min(best.cost, start_cost);
  if (!proved && std::isfinite(incumbent) && GapClosed(incumbent, best.lower)) proved = true;
  if (!proved && plan.ok() && options.lagrangian_branch && !root.fit.choice.empty()) {
    proved = BranchOnDual(plan.value(), root, options, over_time, best, incumbent, result);
  }
  if (!proved) {
    const double left = options.time_budget_seconds > 0
                            ? std::max(1e-3, options.time_budget_seconds - elapsed())
                            : 0.0;
    proved = PlainBranchAndBound(options, left, best, incumbent, result);
  }
  CHECK(!best.choice.empty() || !start.empty() || g.num_nodes() == 0);
  const bool take_start = !start.empty() && start_cost < best.cost;
  const std::vector<int> answer = take_start ? start : pruned.ToOriginal(best.choice);
  OFL_ASSIGN_OR_RETURN(result.solution, graph.Evaluate(answer));
  result.answer_is_start = !start.empty() && answer == start;
  result.proved_optimal = proved;
  result.lower_bound = proved ? result.solution.total_seconds : best.lower;
  result.bound = proved && result.method == "elimination" ? "elimination" : best.bound;
  if (proved) result.note.clear();
  return result;
}

}  // namespace ofl
