// Elimination: the greedy order (simulated on neighbour sets, with fill-in)
// and the numeric pass (tables over neighbours, argmins, the way back).
#include "search/elimination.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <queue>
#include <tuple>

#include "search/elimination_kernels.h"

namespace ofl {
namespace {

using elimination_internal::MinOverFactors;
using elimination_internal::MinOverOneFactor;

// The table a node's elimination builds: the product of its neighbours' K
// (`sizes`, per node).
double TableSize(const std::vector<int>& sizes, const std::vector<int>& neighbours) {
  double size = 1;
  for (int v : neighbours) size *= sizes[v];
  return size;
}

void InsertSorted(std::vector<int>& set, int value) {
  auto it = std::lower_bound(set.begin(), set.end(), value);
  if (it == set.end() || *it != value) set.insert(it, value);
}

void EraseSorted(std::vector<int>& set, int value) {
  auto it = std::lower_bound(set.begin(), set.end(), value);
  if (it != set.end() && *it == value) set.erase(it);
}

}  // namespace

Maybe<EliminationPlan> EliminationPlan::Make(const CostGraph& graph, std::vector<char> use_edge,
                                             int64_t max_table_entries, int64_t max_total_entries) {
  if (use_edge.empty()) use_edge.assign(graph.num_edges(), 1);
  CHECK_EQ(static_cast<int>(use_edge.size()), graph.num_edges());
  std::vector<int> sizes(graph.num_nodes());
  for (int u = 0; u < graph.num_nodes(); ++u) sizes[u] = graph.num_candidates(u);
  EliminationPlan plan;
  OFL_RETURN_IF_ERROR(
      plan.Order(graph, use_edge, sizes, max_table_entries, max_total_entries, &plan.order_));
  plan.graph_ = &graph;
  plan.use_edge_ = std::move(use_edge);
  plan.Compile();
  return plan;
}

bool EliminationPlan::Fits(const CostGraph& graph, const std::vector<int>& sizes,
                           int64_t max_table_entries, int64_t max_total_entries) {
  EliminationPlan plan;
  std::vector<int> order;
  return plan
      .Order(graph, std::vector<char>(graph.num_edges(), 1), sizes, max_table_entries,
             max_total_entries, &order)
      .ok();
}

Status EliminationPlan::Order(const CostGraph& graph, const std::vector<char>& use_edge,
                              const std::vector<int>& sizes, int64_t max_table_entries,
                              int64_t max_total_entries, std::vector<int>* order) {
  const int n = graph.num_nodes();
  std::vector<std::vector<int>> neighbours(n);
  for (int e = 0; e < graph.num_edges(); ++e) {
    if (!use_edge[e]) continue;
    InsertSorted(neighbours[graph.edge(e).from], graph.edge(e).to);
    InsertSorted(neighbours[graph.edge(e).to], graph.edge(e).from);
  }
  for (int u = 0; u < n; ++u) {
    OFL_ENSURE(sizes[u] <= std::numeric_limits<uint16_t>::max(), "elimination: node '",
               graph.node(u).name, "' has ", sizes[u], " candidates, more than 65535");
  }
  // Lazy priority queue of (table size, own K, node); stale entries skipped.
  using Entry = std::tuple<double, int, int>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> queue;
  std::vector<double> weight(n);
  for (int u = 0; u < n; ++u) {
    weight[u] = TableSize(sizes, neighbours[u]);
    queue.emplace(weight[u], sizes[u], u);
  }
  std::vector<char> done(n, 0);
  while (!queue.empty()) {
    auto [size, k, x] = queue.top();
    queue.pop();
    if (done[x] || size != weight[x]) continue;
    if (size > static_cast<double>(max_table_entries)) {
      return Unimplemented("elimination: node '", graph.node(x).name, "' would need a table of ",
                           size, " entries over ", neighbours[x].size(), " neighbours (cap ",
                           max_table_entries, ")");
    }
    total_entries_ += static_cast<int64_t>(size);
    if (total_entries_ > max_total_entries) {
      return Unimplemented("elimination: the tables would hold more than ", max_total_entries,
                           " entries in all");
    }
    largest_table_ = std::max(largest_table_, static_cast<int64_t>(size));
    width_ = std::max(width_, static_cast<int>(neighbours[x].size()));
    order->push_back(x);
    done[x] = 1;
    const std::vector<int> around = neighbours[x];
    for (int a : around) {
      EraseSorted(neighbours[a], x);
      for (int b : around) {
        if (b != a) InsertSorted(neighbours[a], b);
      }
      weight[a] = TableSize(sizes, neighbours[a]);
      queue.emplace(weight[a], sizes[a], a);
    }
    neighbours[x].clear();
  }
  return Status::OK();
}

void EliminationPlan::Compile() {
  const CostGraph& graph = *graph_;
  const int n = graph.num_nodes();
  unary_offset_.assign(n + 1, 0);
  for (int u = 0; u < n; ++u) unary_offset_[u + 1] = unary_offset_[u] + graph.num_candidates(u);
  struct Symbolic {  // a factor's variables and strides
    std::vector<int> vars;
    std::vector<int64_t> strides;
    bool alive = true;
  };
  std::vector<Symbolic> factors;
  std::vector<std::vector<int>> bucket(n);
  edge_data_.clear();
  for (int e = 0; e < graph.num_edges(); ++e) {
    if (!use_edge_[e]) continue;
    const CostEdge& edge = graph.edge(e);
    bucket[edge.from].push_back(factors.size());
    bucket[edge.to].push_back(factors.size());
    factors.push_back(Symbolic{{edge.from, edge.to}, {edge.matrix->cols(), 1}});
    edge_data_.push_back(edge.matrix->row(0));
  }
  steps_.assign(order_.size(), Step());
  int64_t argmins = 0;
  small_table_ = 0;
  std::vector<int> scope;
  for (size_t pos = 0; pos < order_.size(); ++pos) {
    Step& step = steps_[pos];
    const int x = step.x = order_[pos];
    step.input_at = inputs_.size();
    scope.clear();
    for (int id : bucket[x]) {
      if (!factors[id].alive) continue;
      factors[id].alive = false;
      inputs_.push_back(id);
      for (int v : factors[id].vars) {
        if (v != x) InsertSorted(scope, v);
      }
    }
    const int m = step.m = scope.size();
    const int nf = step.nf = inputs_.size() - step.input_at;
    step.scope_at = scope_.size();
    for (int j = 0; j < m; ++j) {
      scope_.push_back(scope[j]);
      sizes_.push_back(graph.num_candidates(scope[j]));
      step.total *= sizes_.back();
    }
    x_stride_.resize(x_stride_.size() + nf, 0);
    step.stride_at = scope_stride_.size();
    scope_stride_.resize(scope_stride_.size() + static_cast<size_t>(nf) * m, 0);
    for (int f = 0; f < nf; ++f) {
      const Symbolic& factor = factors[inputs_[step.input_at + f]];
      for (size_t i = 0; i < factor.vars.size(); ++i) {
        const int v = factor.vars[i];
        if (v == x) {
          x_stride_[step.input_at + f] = factor.strides[i];
        } else {
          int j = std::lower_bound(scope.begin(), scope.end(), v) - scope.begin();
          scope_stride_[step.stride_at + static_cast<size_t>(f) * m + j] = factor.strides[i];
        }
      }
    }
    step.argmin_offset = argmins;
    argmins += step.total;
    if (m <= 1) {
      small_table_ = std::max(small_table_, step.total);
      continue;
    }
    Symbolic table{scope, std::vector<int64_t>(m, 1)};
    for (int j = m - 2; j >= 0; --j) {
      table.strides[j] = table.strides[j + 1] * sizes_[step.scope_at + j + 1];
    }
    step.output = factors.size();
    for (int v : scope) bucket[v].push_back(factors.size());
    factors.push_back(std::move(table));
  }
  CHECK_EQ(argmins, total_entries_);
  num_factors_ = factors.size();
}

std::vector<int> EliminationPlan::Solve(double memory_weight, double* objective) const {
  EliminationWorkspace workspace;
  return SolveUntil(memory_weight, objective, nullptr, *workspace.buffers_);
}

std::vector<int> EliminationPlan::Solve(double memory_weight, double* objective,
                                        EliminationWorkspace& workspace, const double* unary_extra,
                                        const std::function<bool()>* stop) const {
  return SolveUntil(memory_weight, objective, stop, *workspace.buffers_, unary_extra);
}

std::vector<int> EliminationPlan::Solve(double memory_weight, double* objective,
                                        const std::function<bool()>& stop) const {
  EliminationWorkspace workspace;
  return SolveUntil(memory_weight, objective, stop ? &stop : nullptr, *workspace.buffers_);
}

std::vector<int> EliminationPlan::Solve(double memory_weight, double* objective,
                                        EliminationWorkspace& workspace) const {
  return SolveUntil(memory_weight, objective, nullptr, *workspace.buffers_);
}

bool EliminationPlan::SolveStep(const Step& step, const double* unary, double* table, uint16_t* arg,
                                const std::function<bool()>* stop,
                                EliminationWorkspace::Buffers& b) const {
  const int num_edge_factors = edge_data_.size();
  const int* inputs = inputs_.data() + step.input_at;
  b.data.clear();
  for (int f = 0; f < step.nf; ++f) {
    const int id = inputs[f];
    b.data.push_back(id < num_edge_factors ? edge_data_[id]
                                           : b.built[id - num_edge_factors].data());
  }
  const double* ux = unary + unary_offset_[step.x];
  const int kx = graph_->num_candidates(step.x);
  const int64_t* x_stride = x_stride_.data() + step.input_at;
  const int64_t* scope_stride = scope_stride_.data() + step.stride_at;
  if (step.m == 1 && step.nf == 1) {
    MinOverOneFactor(ux, kx, b.data[0], x_stride[0], scope_stride[0], step.total, table, arg);
    return true;
  }
  return MinOverFactors(ux, kx, b.data.data(), step.nf, x_stride, scope_stride,
                        sizes_.data() + step.scope_at, step.m, table, step.total, arg, stop, b);
}

std::vector<int> EliminationPlan::SolveUntil(double memory_weight, double* objective,
                                             const std::function<bool()>* stop,
                                             EliminationWorkspace::Buffers& b,
                                             const double* unary_extra) const {
  const CostGraph& graph = *graph_;
  const int n = graph.num_nodes();
  b.unary.resize(unary_offset_[n]);
  for (int u = 0; u < n; ++u) {
    double* out = b.unary.data() + unary_offset_[u];
    for (const Candidate& c : graph.node(u).candidates) {
      *out++ = c.compute_seconds + memory_weight * static_cast<double>(c.memory_bytes);
    }
  }
  if (unary_extra != nullptr) {
    for (int64_t i = 0; i < unary_offset_[n]; ++i) b.unary[i] += unary_extra[i];
  }
  const int num_edge_factors = edge_data_.size();
  for (std::vector<double>& table : b.built) b.Give(table);  // a stopped solve's leftovers
  b.built.resize(num_factors_ - num_edge_factors);           // tables over 2+ nodes
  if (static_cast<int64_t>(b.argmin.size()) < total_entries_) b.argmin.resize(total_entries_);
  if (static_cast<int64_t>(b.small.size()) < small_table_) b.small.resize(small_table_);
  double constant = 0;
  for (const Step& step : steps_) {
    if (stop != nullptr && (*stop)()) return {};
    std::vector<double> big;
    double* table = b.small.data();
    if (step.m > 1) {
      big = b.Take(step.total);
      table = big.data();
    }
    uint16_t* arg = b.argmin.data() + step.argmin_offset;
    if (!SolveStep(step, b.unary.data(), table, arg, stop, b)) {
      b.Give(big);
      return {};
    }
    const int* inputs = inputs_.data() + step.input_at;
    for (int f = 0; f < step.nf; ++f) {
      if (inputs[f] >= num_edge_factors) b.Give(b.built[inputs[f] - num_edge_factors]);
    }
    if (step.m == 0) {
      constant += table[0];
    } else if (step.m == 1) {
      double* scope_unary = b.unary.data() + unary_offset_[scope_[step.scope_at]];
      for (int64_t i = 0; i < step.total; ++i) scope_unary[i] += table[i];
    } else {
      b.built[step.output - num_edge_factors] = std::move(big);
    }
  }
  std::vector<int> choice(n, -1);
  for (int pos = static_cast<int>(steps_.size()) - 1; pos >= 0; --pos) {
    const Step& step = steps_[pos];
    int64_t t = 0;
    for (int j = 0; j < step.m; ++j) {
      const int v = scope_[step.scope_at + j];
      t = t * graph.num_candidates(v) + choice[v];
    }
    choice[step.x] = b.argmin[step.argmin_offset + t];
  }
  if (objective != nullptr) *objective = constant;
  return choice;
}

double EliminationPlan::Cost(const std::vector<int>& choice) const {
  const CostGraph& graph = *graph_;
  double total = 0;
  for (int u = 0; u < graph.num_nodes(); ++u) {
    total += graph.node(u).candidates[choice[u]].compute_seconds;
  }
  for (int e = 0; e < graph.num_edges(); ++e) {
    if (use_edge_[e])
      total += graph.edge(e).matrix->at(choice[graph.edge(e).from], choice[graph.edge(e).to]);
  }
  return total;
}

double DecisiveMemoryWeight(const CostGraph& graph) {
  double total = 0;
  for (int u = 0; u < graph.num_nodes(); ++u) {
    auto [lo, hi] =
        std::minmax_element(graph.node(u).candidates.begin(), graph.node(u).candidates.end(),
                            [](const Candidate& a, const Candidate& b) {
                              return a.compute_seconds < b.compute_seconds;
                            });
    total += hi->compute_seconds - lo->compute_seconds;
  }
  for (int e = 0; e < graph.num_edges(); ++e) {
    total += graph.edge(e).matrix->max() - graph.edge(e).matrix->min();
  }
  return std::max(total, 1e-300) * 2;
}

// From a pair of answers on either side of the limit, each solve is at the
// weight where their two lines cross (elimination.h).
std::vector<int> LagrangianSolve(const CostGraph& graph, const EliminationPlan& plan,
                                 int iterations, EliminationWorkspace* workspace) {
  EliminationWorkspace own;
  EliminationWorkspace& w = workspace != nullptr ? *workspace : own;
  std::vector<int> low = plan.Solve(0, nullptr, w);
  const int64_t limit = graph.memory_limit();
  if (graph.MemoryBytes(low) <= limit) return low;
  double high_weight = DecisiveMemoryWeight(graph), low_weight = 0;
  std::vector<int> high = plan.Solve(high_weight, nullptr, w);
  if (graph.MemoryBytes(high) > limit) return {};
  std::vector<int> best = high;
  double best_cost = graph.TotalSeconds(high);
  // Each side's line: cost (the plan's objective at weight 0) and memory.
  double low_cost = plan.Cost(low), high_cost = plan.Cost(high);
  double low_memory = static_cast<double>(graph.MemoryBytes(low));
  double high_memory = static_cast<double>(graph.MemoryBytes(high));
  for (int i = 0; i < iterations && low_memory > high_memory; ++i) {
    const double weight = (high_cost - low_cost) / (low_memory - high_memory);
    if (!(weight > low_weight && weight < high_weight)) break;  // no room left between them
    double objective = 0;
    std::vector<int> x = plan.Solve(weight, &objective, w);
    const double crossing = high_cost + weight * high_memory;
    const int64_t memory = graph.MemoryBytes(x);
    const bool fits = memory <= limit;
    if (fits) {
      double cost = graph.TotalSeconds(x);
      if (cost < best_cost) {
        best_cost = cost;
        best = x;
      }
    }
    if (!(objective < crossing - 1e-12 * std::abs(crossing))) break;  // adjacent on the envelope
    if (fits) {
      high_weight = weight;
      high_cost = plan.Cost(x);
      high_memory = static_cast<double>(memory);
    } else {
      low_weight = weight;
      low_cost = plan.Cost(x);
      low_memory = static_cast<double>(memory);
    }
  }
  return best;
}

}  // namespace ofl
