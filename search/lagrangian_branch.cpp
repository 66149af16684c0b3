// Lagrangian branch and bound: the dual by line crossing, subproblems best
// bound first.
#include "search/lagrangian_branch.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <queue>
#include <utility>

#include "search/autoddl.h"

namespace ofl {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();
// A subproblem whose bound is within this (relative) of the incumbent is
// closed: below exact.cpp's proof tolerance (1e-9), so a finished search
// proves the incumbent.
constexpr double kPruneTolerance = 1e-10;
// A solve no lower than the crossing of the two lines (relative) has
// reached the dual's maximum.
constexpr double kCrossTolerance = 1e-12;

// A node restricted to candidates with memory above (or at most) a threshold.
struct Restriction {
  int node;
  int64_t threshold;
  bool above;
};

// Solves the dual of one subproblem; owns the workspace and the unary
// extra costs (0 or +infinity per candidate).
class DualSolver {
 public:
  using OfferFn = std::function<void(const DualLine&)>;

  DualSolver(const CostGraph& graph, const EliminationPlan& plan, int max_solves,
             const std::function<bool()>& stop, OfferFn offer)
      : graph_(graph),
        plan_(plan),
        max_solves_(max_solves),
        stop_(stop),
        offer_(std::move(offer)),
        limit_(static_cast<double>(graph.memory_limit())),
        decisive_(DecisiveMemoryWeight(graph)) {
    offset_.assign(graph.num_nodes() + 1, 0);
    for (int u = 0; u < graph.num_nodes(); ++u) {
      offset_[u + 1] = offset_[u] + graph.num_candidates(u);
    }
    extra_.assign(offset_.back(), 0.0);
  }

  int64_t solves() const { return solves_; }

  // Forbids the candidates `restrictions` exclude (and no others).
  void Restrict(const std::vector<Restriction>& restrictions) {
    std::fill(extra_.begin(), extra_.end(), 0.0);
    for (const Restriction& r : restrictions) {
      const std::vector<Candidate>& c = graph_.node(r.node).candidates;
      for (size_t y = 0; y < c.size(); ++y) {
        if ((c[y].memory_bytes > r.threshold) != r.above) extra_[offset_[r.node] + y] = kInfinity;
      }
    }
  }

  bool Allowed(const std::vector<int>& x) const {
    if (x.empty()) return false;
    for (size_t u = 0; u < x.size(); ++u) {
      if (extra_[offset_[u] + x[u]] != 0) return false;
    }
    return true;
  }

  // The dual under the current restriction, from the seeds it allows and a
  // first solve at `hint` (the parent's weight; 0: none); `floor` is a
  // bound known already (the parent's), `cutoff` the incumbent's prune level.
  DualAnswer Run(const DualLine* seed_over, const DualLine* seed_fit, double hint, double floor,
                 double cutoff);

 private:
  // One elimination at `weight`; false when stopped. `value` gets the
  // dual function's value there.
  bool Solve(double weight, DualLine& line, double& value) {
    if (stop_ && stop_()) return false;
    ++solves_;
    double objective = 0;
    line.choice =
        plan_.Solve(weight, &objective, workspace_, extra_.data(), stop_ ? &stop_ : nullptr);
    if (line.choice.empty() && graph_.num_nodes() > 0) return false;
    line.cost = graph_.TotalSeconds(line.choice);
    line.memory = graph_.MemoryBytes(line.choice);
    value = objective - weight * limit_;
    return true;
  }
  bool Fits(const DualLine& l) const { return l.memory <= graph_.memory_limit(); }
  double At(const DualLine& l, double w) const {
    return l.cost + w * (static_cast<double>(l.memory) - limit_);
  }
  // Opens the two sides from the seeds or by solving; false when done.
  // `hint` > 0: a weight to solve at first when one side is seeded.
  bool Open(const DualLine* seed_over, const DualLine* seed_fit, double hint, DualAnswer& a);
  void Raise(DualAnswer& a, double value, double weight) {
    if (value > a.peak) a.peak = value, a.weight = weight;
    a.bound = std::max(a.bound, value);
  }

  const CostGraph& graph_;
  const EliminationPlan& plan_;
  int max_solves_;
  const std::function<bool()>& stop_;
  OfferFn offer_;
  double limit_;
  double decisive_;
  std::vector<int64_t> offset_;
  std::vector<double> extra_;
  EliminationWorkspace workspace_;
  int64_t solves_ = 0;
};

bool DualSolver::Open(const DualLine* seed_over, const DualLine* seed_fit, double hint,
                      DualAnswer& a) {
  bool has_over = seed_over != nullptr && Allowed(seed_over->choice);
  bool has_fit = seed_fit != nullptr && Allowed(seed_fit->choice);
  if (has_over) a.over = *seed_over;
  if (has_fit) a.fit = *seed_fit;
  double value = 0;
  DualLine line;
  if (hint > 0 && has_over != has_fit) {  // the parent's weight: likely near this dual's
    if (!Solve(hint, line, value)) return a.stopped = true, false;
    ++a.solves;
    Raise(a, value, hint);
    has_fit |= Fits(line);
    has_over |= !Fits(line);
    if (Fits(line)) offer_(line);
    std::swap(Fits(line) ? a.fit : a.over, line);
  }
  if (!has_over) {
    if (!Solve(0, a.over, value)) return a.stopped = true, false;
    ++a.solves;
    Raise(a, value, 0);
    if (Fits(a.over)) {  // the cheapest allowed answer keeps the limit
      a.fit = a.over;
      a.fits = true;
      a.bound = std::max(a.bound, a.fit.cost);
      offer_(a.fit);
      return false;
    }
  }
  if (has_fit) return true;
  if (!Solve(decisive_, a.fit, value)) return a.stopped = true, false;
  ++a.solves;
  Raise(a, value, decisive_);
  if (!Fits(a.fit)) return a.infeasible = true, false;  // a least-memory answer
  offer_(a.fit);
  return true;
}

DualAnswer DualSolver::Run(const DualLine* seed_over, const DualLine* seed_fit, double hint,
                           double floor, double cutoff) {
  DualAnswer a;
  a.bound = floor;
  if (!Open(seed_over, seed_fit, hint, a)) return a;
  DualLine line;
  while (a.solves < max_solves_ && a.bound < cutoff) {
    double w = (a.fit.cost - a.over.cost) / static_cast<double>(a.over.memory - a.fit.memory);
    if (!(w > 0)) w = 0;
    double value = 0;
    if (!Solve(w, line, value)) return a.stopped = true, a;
    ++a.solves;
    Raise(a, value, w);
    const double cross = std::min(At(a.over, w), At(a.fit, w));
    if (value >= cross - kCrossTolerance * std::fabs(cross)) {
      a.converged = true;
      return a;
    }
    if (!Fits(line)) {
      std::swap(a.over, line);
      continue;
    }
    offer_(line);
    std::swap(a.fit, line);
    if (w == 0) {  // the cheapest allowed answer keeps the limit
      a.fits = true;
      a.bound = std::max(a.bound, a.fit.cost);
      return a;
    }
  }
  return a;
}

// The node whose memory differs most between the two lines (one exists:
// their memories differ).
int BranchNode(const CostGraph& graph, const DualLine& over, const DualLine& fit) {
  int best = -1;
  int64_t most = -1;
  for (int u = 0; u < graph.num_nodes(); ++u) {
    const int64_t a = graph.node(u).candidates[over.choice[u]].memory_bytes;
    const int64_t b = graph.node(u).candidates[fit.choice[u]].memory_bytes;
    const int64_t d = a > b ? a - b : b - a;
    if (d > most) most = d, best = u;
  }
  return best;
}

struct Subproblem {
  double bound = 0;
  double weight = 0;  // where its dual peaked
  std::vector<Restriction> restrictions;
  DualLine over, fit;
};

}  // namespace

DualAnswer LagrangianRootDual(const CostGraph& graph, const EliminationPlan& plan,
                              const DualLine* seed_over, int max_solves,
                              const std::function<bool()>& stop) {
  DualSolver dual(graph, plan, max_solves, stop, [](const DualLine&) {});
  DualAnswer a = dual.Run(seed_over, nullptr, 0, -kInfinity, kInfinity);
  if (seed_over != nullptr) a.bound = std::max(a.bound, seed_over->cost);
  return a;
}

LagrangianBranchResult LagrangianBranch(const CostGraph& graph, const EliminationPlan& plan,
                                        const DualAnswer& root, std::vector<int>& best,
                                        double& best_cost, const LagrangianBranchOptions& options) {
  auto offer = [&](const DualLine& line) {
    std::vector<int> x = line.choice;
    CoordinateDescent(graph, x, 1000, nullptr);
    const double c = graph.TotalSeconds(x);
    if (graph.MemoryBytes(x) <= graph.memory_limit() && c < best_cost) best_cost = c, best = x;
  };
  DualSolver dual(graph, plan, options.max_dual_solves, options.stop, offer);
  auto cutoff = [&] {
    return std::isfinite(best_cost) ? best_cost - kPruneTolerance * std::fabs(best_cost)
                                    : kInfinity;
  };
  LagrangianBranchResult result;
  std::vector<Subproblem> pool;
  using Entry = std::pair<double, size_t>;  // bound, index into pool
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> open;
  double lost = kInfinity;  // the least bound of subproblems left unbounded
  auto push = [&](Subproblem s) {
    open.push({s.bound, pool.size()});
    pool.push_back(std::move(s));
  };
  if (root.fits) {
    offer(root.fit);
  } else if (root.infeasible || root.stopped) {
    lost = root.bound;
  } else {
    offer(root.fit);
    push({root.bound, root.weight, {}, root.over, root.fit});
  }
  while (!open.empty() && open.top().first < cutoff()) {
    if (result.nodes >= options.max_nodes || (options.stop && options.stop())) break;
    Subproblem top = std::move(pool[open.top().second]);
    open.pop();
    const int u = BranchNode(graph, top.over, top.fit);
    const int64_t a = graph.node(u).candidates[top.over.choice[u]].memory_bytes;
    const int64_t b = graph.node(u).candidates[top.fit.choice[u]].memory_bytes;
    for (bool above : {true, false}) {
      Subproblem child{top.bound, top.weight, top.restrictions, {}, {}};
      child.restrictions.push_back({u, std::min(a, b), above});
      dual.Restrict(child.restrictions);
      ++result.nodes;
      DualAnswer d = dual.Run(&top.over, &top.fit, top.weight, top.bound, cutoff());
      if (d.stopped) lost = std::min(lost, d.bound);
      if (d.stopped || d.infeasible || d.fits || d.bound >= cutoff()) continue;
      child.bound = d.bound;
      child.weight = d.weight;
      child.over = std::move(d.over);
      child.fit = std::move(d.fit);
      push(std::move(child));
    }
  }
  result.solves = dual.solves() + root.solves;
  result.finished = lost == kInfinity && (open.empty() || open.top().first >= cutoff());
  result.lower_bound = std::min({best_cost, lost, open.empty() ? kInfinity : open.top().first});
  if (result.finished) result.lower_bound = best_cost;
  return result;
}

}  // namespace ofl
