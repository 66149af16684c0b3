// Ball descent: breadth-first balls re-chosen exactly by elimination.
#include "search/ball_descent.h"

#include <algorithm>
#include <cmath>

#include "search/elimination.h"

namespace ofl {

BallDescent::BallDescent(const CostGraph& graph, const BallOptions& options)
    : graph_(graph),
      options_(options),
      size_(graph.num_nodes(), options.max_nodes),
      local_(graph.num_nodes(), -1) {
  budget_ = options.budget;
  if (budget_ < 0) {
    budget_ = std::clamp<int64_t>((int64_t{1} << 30) / std::max(1, graph.num_nodes()),
                                  int64_t{1} << 18, int64_t{1} << 22);
  }
  Reset();
}

void BallDescent::Reset() {
  checked_.assign(graph_.num_nodes(), -1);
  touched_.assign(graph_.num_nodes(), 0);
  solved_.clear();
  clock_ = 0;
}

std::vector<int> BallDescent::Ball(int centre, int max_nodes) {
  std::vector<int> ball{centre}, depth{0};
  std::vector<int>& mark = local_;  // restored below
  mark[centre] = 0;
  for (size_t i = 0; i < ball.size() && static_cast<int>(ball.size()) < max_nodes; ++i) {
    if (depth[i] >= options_.radius) break;
    for (const Incidence& inc : graph_.incident(ball[i])) {
      if (mark[inc.neighbour] >= 0) continue;
      mark[inc.neighbour] = ball.size();
      ball.push_back(inc.neighbour);
      depth.push_back(depth[i] + 1);
      if (static_cast<int>(ball.size()) >= max_nodes) break;
    }
  }
  for (int u : ball) mark[u] = -1;
  return ball;
}

BallDescent::Outcome BallDescent::Solve(const std::vector<int>& ball, std::vector<int>& choice,
                                        int64_t& used) {
  for (size_t i = 0; i < ball.size(); ++i) local_[ball[i]] = i;
  CostGraph sub;
  int64_t ball_memory = 0;
  for (int u : ball) {
    std::vector<Candidate> cands = graph_.node(u).candidates;
    for (const Incidence& inc : graph_.incident(u)) {
      if (local_[inc.neighbour] >= 0) continue;
      for (size_t c = 0; c < cands.size(); ++c) {
        cands[c].compute_seconds += graph_.EdgeSeconds(inc, c, choice[inc.neighbour]);
      }
    }
    ball_memory += cands[choice[u]].memory_bytes;
    work_ += static_cast<int64_t>(cands.size()) * (1 + graph_.incident(u).size());
    CHECK(sub.AddNode("", std::move(cands)).ok());
  }
  for (int u : ball) {
    for (const Incidence& inc : graph_.incident(u)) {
      if (!inc.outgoing || local_[inc.neighbour] < 0) continue;
      CHECK(sub.AddEdge(local_[u], local_[inc.neighbour], graph_.edge(inc.edge).matrix).ok());
    }
  }
  std::vector<int> current(ball.size());
  for (size_t i = 0; i < ball.size(); ++i) current[i] = choice[ball[i]];
  for (int u : ball) local_[u] = -1;
  const int64_t limit = graph_.memory_limit();
  if (limit != kNoMemoryLimit) CHECK(sub.SetMemoryLimit(limit - (used - ball_memory)).ok());
  Maybe<EliminationPlan> made =
      EliminationPlan::Make(sub, {}, options_.max_entries, options_.max_entries);
  if (!made.ok()) return Outcome::kTooBig;
  const EliminationPlan& plan = made.value();
  work_ += plan.total_entries();
  std::vector<int> best = plan.Solve(0, nullptr, workspace_);
  if (sub.MemoryBytes(best) > sub.memory_limit()) {  // bisect a weight on memory
    double high = DecisiveMemoryWeight(sub), low = high * 0x1p-64;
    best = current;
    double best_cost = sub.TotalSeconds(current);
    for (int i = 0; i < options_.lagrangian_iterations; ++i) {
      double mid = std::sqrt(low * high);
      std::vector<int> x = plan.Solve(mid, nullptr, workspace_);
      work_ += plan.total_entries();
      if (sub.MemoryBytes(x) <= sub.memory_limit()) {
        high = mid;
        double cost = sub.TotalSeconds(x);
        if (cost < best_cost) best_cost = cost, best = std::move(x);
      } else {
        low = mid;
      }
    }
  }
  double before = sub.TotalSeconds(current), after = sub.TotalSeconds(best);
  if (!(after < before - 1e-12 * before)) return Outcome::kStays;
  for (size_t i = 0; i < ball.size(); ++i) choice[ball[i]] = best[i];
  used += sub.MemoryBytes(best) - ball_memory;
  return Outcome::kMoved;
}

int BallDescent::Pass(std::vector<int>& choice) {
  int64_t used = graph_.MemoryBytes(choice);
  int moved = 0;
  for (int u = 0; u < graph_.num_nodes() && work_ < budget_; ++u) {
    std::vector<int> ball = Ball(u, size_[u]);
    bool fresh = checked_[u] < 0;
    for (size_t i = 0; i < ball.size() && !fresh; ++i) fresh = touched_[ball[i]] > checked_[u];
    checked_[u] = clock_;
    if (!fresh || ball.size() < 3) continue;  // pairs and single nodes are covered elsewhere
    // Another centre's ball may hold the same nodes (on small graphs, all):
    // skip it when none of them was touched since that one was solved.
    std::vector<int> key = ball;
    std::sort(key.begin(), key.end());
    auto seen = solved_.find(key);
    if (seen != solved_.end()) {
      bool changed = false;
      for (int w : key) changed = changed || touched_[w] > seen->second;
      if (!changed) continue;
    }
    Outcome outcome;
    while ((outcome = Solve(ball, choice, used)) == Outcome::kTooBig && ball.size() > 3) {
      size_[u] = std::max<int>(3, ball.size() / 2);  // remembered for later passes
      ball = Ball(u, size_[u]);
    }
    if (outcome == Outcome::kTooBig) continue;
    if (outcome == Outcome::kStays) {
      std::sort(ball.begin(), ball.end());
      solved_[ball] = clock_;
      continue;
    }
    ++moved;
    ++clock_;
    for (int w : ball) {
      touched_[w] = clock_;
      for (const Incidence& inc : graph_.incident(w)) touched_[inc.neighbour] = clock_;
    }
  }
  return moved;
}

}  // namespace ofl
