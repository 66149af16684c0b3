// Block aliasing: structural classes by colour refinement, the aliased graph,
// autoddl's `blocks` start.
#include "search/block_alias.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <tuple>
#include <utility>

#include "search/cutset.h"

namespace ofl {

namespace {

int64_t Bits(double x) {
  int64_t b = 0;
  std::memcpy(&b, &x, sizeof b);
  return b;
}

// Ids that equal matrices (by content) share.
class MatrixIds {
 public:
  int Of(const EdgeMatrixPtr& m) {
    auto it = by_pointer_.find(m.get());
    if (it != by_pointer_.end()) return it->second;
    std::vector<double> data(m->row(0), m->row(0) + static_cast<size_t>(m->rows()) * m->cols());
    auto key = std::make_tuple(m->rows(), m->cols(), std::move(data));
    auto [at, added] = by_content_.emplace(std::move(key), static_cast<int>(by_content_.size()));
    by_pointer_.emplace(m.get(), at->second);
    return at->second;
  }

 private:
  std::map<const EdgeMatrix*, int> by_pointer_;
  std::map<std::tuple<int, int, std::vector<double>>, int> by_content_;
};

// Colours numbered by first appearance in node order.
int Renumber(std::vector<int>& colour) {
  std::map<int, int> order;
  for (int& c : colour) c = order.emplace(c, static_cast<int>(order.size())).first->second;
  return static_cast<int>(order.size());
}

}  // namespace

int64_t NodeClasses::repeated_nodes() const {
  int64_t n = 0;
  for (const std::vector<int>& m : members) n += m.size() > 1 ? static_cast<int64_t>(m.size()) : 0;
  return n;
}

NodeClasses StructuralClasses(const CostGraph& graph, const AxisLabels& labels, int rounds) {
  const int n = graph.num_nodes();
  const bool labelled = labels.usable(graph);
  std::vector<int> colour(n);
  {
    std::map<std::vector<int64_t>, int> ids;
    for (int u = 0; u < n; ++u) {
      std::vector<int64_t> key;
      for (const Candidate& c : graph.node(u).candidates) {
        key.push_back(Bits(c.compute_seconds));
        key.push_back(c.memory_bytes);
      }
      if (labelled) key.insert(key.end(), labels.of[u].begin(), labels.of[u].end());
      colour[u] = ids.emplace(std::move(key), static_cast<int>(ids.size())).first->second;
    }
  }
  int colours = Renumber(colour);
  MatrixIds matrices;
  std::vector<int> matrix_of(graph.num_edges());
  for (int e = 0; e < graph.num_edges(); ++e) matrix_of[e] = matrices.Of(graph.edge(e).matrix);
  for (int round = 0; round < rounds; ++round) {
    std::map<std::vector<int64_t>, int> ids;
    std::vector<int> next(n);
    std::vector<std::pair<int64_t, int64_t>> around;
    for (int u = 0; u < n; ++u) {
      around.clear();
      for (const Incidence& inc : graph.incident(u)) {
        around.emplace_back(int64_t{matrix_of[inc.edge]} * 2 + (inc.outgoing ? 1 : 0),
                            colour[inc.neighbour]);
      }
      std::sort(around.begin(), around.end());
      std::vector<int64_t> key{colour[u]};
      for (const auto& [m, c] : around) {
        key.push_back(m);
        key.push_back(c);
      }
      next[u] = ids.emplace(std::move(key), static_cast<int>(ids.size())).first->second;
    }
    const int refined = Renumber(next);
    colour = std::move(next);
    if (refined == colours) break;  // stable: more rounds split nothing
    colours = refined;
  }
  NodeClasses out;
  out.of = std::move(colour);
  out.members.resize(colours);
  for (int u = 0; u < n; ++u) out.members[out.of[u]].push_back(u);
  return out;
}

AliasedGraph::AliasedGraph(const CostGraph& graph, NodeClasses classes, const AxisLabels& labels)
    : classes_(std::move(classes)) {
  const int num_classes = static_cast<int>(classes_.members.size());
  std::vector<std::vector<Candidate>> cands(num_classes);
  for (int k = 0; k < num_classes; ++k) {
    const int first = classes_.members[k].front();
    cands[k].assign(graph.num_candidates(first), Candidate{});
    for (int u : classes_.members[k]) {
      const std::vector<Candidate>& mine = graph.node(u).candidates;
      CHECK_EQ(mine.size(), cands[k].size()) << "a class's members have the same candidates";
      for (size_t c = 0; c < mine.size(); ++c) {
        cands[k][c].compute_seconds += mine[c].compute_seconds;
        cands[k][c].memory_bytes += mine[c].memory_bytes;
      }
    }
  }
  // Edges between classes, counted per (classes, matrix, direction) first.
  std::map<std::tuple<int, int, const EdgeMatrix*, bool>, int> counts;
  for (int e = 0; e < graph.num_edges(); ++e) {
    const CostEdge& edge = graph.edge(e);
    const int a = classes_.of[edge.from], b = classes_.of[edge.to];
    if (a == b) {
      for (size_t c = 0; c < cands[a].size(); ++c) {
        cands[a][c].compute_seconds += edge.matrix->at(static_cast<int>(c), static_cast<int>(c));
      }
      continue;
    }
    ++counts[std::make_tuple(std::min(a, b), std::max(a, b), edge.matrix.get(), a > b)];
  }
  for (int k = 0; k < num_classes; ++k) {
    Maybe<int> added = aliased_.AddNode("", std::move(cands[k]));
    CHECK(added.ok()) << added.status().message();
  }
  std::map<std::pair<int, int>, std::vector<double>> sums;
  for (const auto& [key, count] : counts) {
    const auto& [a, b, m, transposed] = key;
    const int rows = aliased_.num_candidates(a), cols = aliased_.num_candidates(b);
    std::vector<double>& sum = sums[{a, b}];
    sum.resize(static_cast<size_t>(rows) * cols, 0.0);
    for (int r = 0; r < rows; ++r) {
      for (int c = 0; c < cols; ++c) {
        sum[static_cast<size_t>(r) * cols + c] += count * (transposed ? m->at(c, r) : m->at(r, c));
      }
    }
  }
  for (auto& [ab, sum] : sums) {
    Maybe<EdgeMatrixPtr> m = EdgeMatrix::Create(aliased_.num_candidates(ab.first),
                                                aliased_.num_candidates(ab.second), std::move(sum));
    CHECK(m.ok()) << m.status().message();
    CHECK(aliased_.AddEdge(ab.first, ab.second, std::move(m).value()).ok());
  }
  CHECK(aliased_.SetMemoryLimit(graph.memory_limit()).ok());
  if (labels.usable(graph)) {
    labels_.axes = labels.axes;
    for (int k = 0; k < num_classes; ++k) labels_.of.push_back(labels.of[classes_.members[k][0]]);
  }
}

std::vector<int> AliasedGraph::Lift(const std::vector<int>& class_choice) const {
  std::vector<int> choice(classes_.of.size());
  for (size_t u = 0; u < choice.size(); ++u) choice[u] = class_choice[classes_.of[u]];
  return choice;
}

std::vector<int> AliasedGraph::Project(const std::vector<int>& choice) const {
  std::vector<int> class_choice(classes_.members.size());
  for (size_t k = 0; k < class_choice.size(); ++k) class_choice[k] = choice[classes_.members[k][0]];
  return class_choice;
}

namespace {

// The work cutset conditioning may spend on the aliased graph (cutset.h:
// table entries per solve, Lagrangian iterations counted). An entry costs
// tens of ns (a min over candidates of sums of factors): 2^27 took 6 s of
// CPU on GPT 8 layers [8] (48 assignments) and 30 s once memory bound (24
// layers), where autoddl over the aliased graph reaches the same answer.
constexpr int64_t kBlockCutsetBudget = int64_t{1} << 24;

}  // namespace

std::vector<int> BlocksStart(const CostGraph& graph, const AxisLabels& labels,
                             const AutoddlOptions& options, const NamedChoices& given,
                             int64_t* aliased_nodes) {
  NodeClasses classes = StructuralClasses(graph, labels, options.block_rounds);
  if (classes.repeated_nodes() == 0) return {};
  AliasedGraph aliased(graph, std::move(classes), labels);
  *aliased_nodes = aliased.graph().num_nodes();
  AutoddlOptions inner = options;
  inner.block_rounds = 0;
  inner.extra_starts.clear();
  for (const auto& [name, choice] : given) {
    std::vector<int> projected = aliased.Project(choice);
    // One that did not choose alike may need more memory projected.
    if (aliased.graph().MemoryBytes(projected) > aliased.graph().memory_limit()) continue;
    inner.extra_starts.emplace_back(name, std::move(projected));
  }
  inner.axis_labels = aliased.labels();
  inner.ball_passes = std::min(options.ball_passes, options.block_ball_passes);
  // The aliased graph is small: its "elimination" start may use larger tables.
  inner.elimination_max_entries =
      std::max(options.elimination_max_entries, options.block_max_entries);
  // The aliased graph's optimum by cutset conditioning where that is cheap
  // (its layer-to-layer edges close rings too wide to eliminate); else, or
  // when memory bound a solve, autoddl over it too, and the better answer.
  const CostGraph& a = aliased.graph();
  CutsetOptions cut;
  cut.max_entries = options.block_max_entries;
  cut.budget = kBlockCutsetBudget;
  cut.lagrangian_iterations = options.lagrangian_iterations;
  CutsetAnswer exact = CutsetSolve(a, cut);
  if (exact.exact && !exact.choice.empty()) return aliased.Lift(exact.choice);
  Maybe<AutoddlResult> found = AutoddlSearch(a, inner);
  if (!found.ok()) return exact.choice.empty() ? std::vector<int>{} : aliased.Lift(exact.choice);
  const std::vector<int>& searched = found.value().solution.choice;
  if (!exact.choice.empty() && a.TotalSeconds(exact.choice) < a.TotalSeconds(searched)) {
    return aliased.Lift(exact.choice);
  }
  return aliased.Lift(searched);
}

}  // namespace ofl
