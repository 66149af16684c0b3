// Tree-block descent: the forest split and the exact pass per block.
#include "search/tree_descent.h"

#include <algorithm>
#include <limits>
#include <numeric>

#include "search/elimination.h"

namespace ofl {
namespace {

// Re-chooses one block exactly with the rest fixed; true when it moved.
class BlockSolver {
 public:
  BlockSolver(const CostGraph& graph, std::vector<int>& choice)
      : graph_(graph),
        choice_(choice),
        in_block_(graph.num_nodes(), 0),
        parent_(graph.num_nodes(), -1),
        position_(graph.num_nodes(), -1),
        offset_(graph.num_nodes() + 1, 0) {
    used_ = graph.MemoryBytes(choice);
    for (int u = 0; u < graph.num_nodes(); ++u) {
      offset_[u + 1] = offset_[u] + graph.num_candidates(u);
    }
    values_.resize(offset_.back());
  }

  // Re-chooses `block`; true when it moved. `settled`: whether the block is
  // now at its optimum given the nodes around it (it moved, or nothing was
  // better; not when the better choice broke the memory limit); `share`: its
  // part of the total then (see Share()).
  // `cache` keeps each tree's optimum between solves of this block: a tree
  // only its outside neighbours feed (its own nodes' choices do not enter its
  // optimum) is solved again only when one of them changed.
  bool Solve(const std::vector<int>& block, TreeDescent::TreeCache& cache, bool* settled,
             double* share) {
    for (int u : block) in_block_[u] = 1;
    std::vector<int> order = Traverse(block);  // parents before children, tree by tree
    if (!cache.laid_out) LayOut(order, cache);
    std::vector<int>& fresh = cache.fresh;
    for (size_t t = 0; t + 1 < cache.tree_start.size(); ++t) {
      if (cache.solved && OutsideKept(t, cache)) continue;
      const int begin = cache.tree_start[t], end = cache.tree_start[t + 1];
      for (int i = begin; i < end; ++i) InitValue(order[i]);
      for (int i = end - 1; i >= begin; --i) Up(order[i]);
      const double* v = Value(order[begin]);
      fresh[begin] = std::min_element(v, v + graph_.num_candidates(order[begin])) - v;
      cache.tree_value[t] = v[fresh[begin]];
      for (int i = begin + 1; i < end; ++i) {
        fresh[i] = Down(order[i], fresh[position_[parent_[order[i]]]]);
      }
      for (int j = cache.outside_start[t]; j < cache.outside_start[t + 1]; ++j) {
        cache.outside_seen[j] = choice_[cache.outside[j]];
      }
    }
    cache.solved = true;
    double before = 0, after = 0;
    int64_t memory = used_;
    for (size_t i = 0, t = 0; i < order.size(); ++i) {
      int u = order[i];
      if (parent_[u] < 0) after += cache.tree_value[t++];
      before += Current(u);
      memory += Memory(u, fresh[i]) - Memory(u, choice_[u]);
    }
    for (int u : order) {
      in_block_[u] = 0;
      position_[u] = -1;
      parent_[u] = -1;
    }
    *settled = !(after < before - 1e-12 * before);
    *share = before;
    if (*settled || memory > graph_.memory_limit()) return false;
    for (size_t i = 0; i < order.size(); ++i) choice_[order[i]] = fresh[i];
    used_ = memory;
    *settled = true;
    *share = after;
    return true;
  }

  // The block's part of the total at the current choice (compute, edges to
  // outside nodes and inside it), summed as Solve() sums `before`.
  double Share(const std::vector<int>& block) {
    for (int u : block) in_block_[u] = 1;
    std::vector<int> order = Traverse(block);
    double share = 0;
    for (int u : order) share += Current(u);
    for (int u : order) {
      in_block_[u] = 0;
      position_[u] = -1;
      parent_[u] = -1;
    }
    return share;
  }

 private:
  int64_t Memory(int u, int c) const { return graph_.node(u).candidates[c].memory_bytes; }

  // The trees of `order` and the nodes outside the block each one touches.
  void LayOut(const std::vector<int>& order, TreeDescent::TreeCache& cache) const {
    cache.fresh.assign(order.size(), 0);
    for (size_t i = 0; i < order.size(); ++i) {
      if (parent_[order[i]] >= 0) continue;
      cache.tree_start.push_back(i);
      cache.outside_start.push_back(cache.outside.size());
      for (size_t j = i; j < order.size() && (j == i || parent_[order[j]] >= 0); ++j) {
        for (const Incidence& inc : graph_.incident(order[j])) {
          if (!in_block_[inc.neighbour]) cache.outside.push_back(inc.neighbour);
        }
      }
    }
    cache.tree_start.push_back(order.size());
    cache.outside_start.push_back(cache.outside.size());
    cache.outside_seen.assign(cache.outside.size(), -1);
    cache.tree_value.assign(cache.tree_start.size() - 1, 0);
    cache.laid_out = true;
  }

  // Whether tree t's outside neighbours hold the choices its optimum saw.
  bool OutsideKept(size_t t, const TreeDescent::TreeCache& cache) const {
    for (int j = cache.outside_start[t]; j < cache.outside_start[t + 1]; ++j) {
      if (cache.outside_seen[j] != choice_[cache.outside[j]]) return false;
    }
    return true;
  }

  double* Value(int u) { return values_.data() + offset_[u]; }
  const double* Value(int u) const { return values_.data() + offset_[u]; }
  // The transfer of `inc` seen from u (inline: the passes call it per candidate).
  double Edge(const Incidence& inc, int u_choice, int neighbour_choice) const {
    const EdgeMatrix& m = *graph_.edge(inc.edge).matrix;
    return inc.outgoing ? m.at(u_choice, neighbour_choice) : m.at(neighbour_choice, u_choice);
  }

  // Breadth-first over the block's trees, roots in index order.
  std::vector<int> Traverse(const std::vector<int>& block) {
    std::vector<int> order;
    for (int root : block) {
      if (position_[root] >= 0) continue;
      position_[root] = order.size();
      order.push_back(root);
      for (size_t i = order.size() - 1; i < order.size(); ++i) {
        for (const Incidence& inc : graph_.incident(order[i])) {
          int w = inc.neighbour;
          if (!in_block_[w] || position_[w] >= 0) continue;
          parent_[w] = order[i];
          position_[w] = order.size();
          order.push_back(w);
        }
      }
    }
    return order;
  }

  // u's compute plus its edges to the fixed nodes outside the block.
  void InitValue(int u) {
    double* v = Value(u);
    const int k = graph_.num_candidates(u);
    const std::vector<Candidate>& cands = graph_.node(u).candidates;
    for (int c = 0; c < k; ++c) v[c] = cands[c].compute_seconds;
    for (const Incidence& inc : graph_.incident(u)) {
      if (in_block_[inc.neighbour]) continue;
      const EdgeMatrix& m = *graph_.edge(inc.edge).matrix;
      const int y = choice_[inc.neighbour];
      if (inc.outgoing) {
        for (int c = 0; c < k; ++c) v[c] += m.at(c, y);
      } else {
        const double* row = m.row(y);
        for (int c = 0; c < k; ++c) v[c] += row[c];
      }
    }
  }

  // u's subtree is folded into value_[u]: fold it into its parent's (for
  // each of the parent's candidates, u's best; Down() finds which it was).
  void Up(int u) {
    int p = parent_[u];
    if (p < 0) return;
    int ku = graph_.num_candidates(u), kp = graph_.num_candidates(p);
    const double* v = Value(u);
    message_.assign(kp, std::numeric_limits<double>::infinity());
    const Incidence* single = nullptr;
    pair_.clear();
    for (const Incidence& inc : graph_.incident(u)) {
      if (inc.neighbour != p) continue;
      if (single == nullptr && pair_.empty()) {
        single = &inc;
        continue;
      }
      if (single != nullptr) AddToPair(*single, ku, kp);
      single = nullptr;
      AddToPair(inc, ku, kp);
    }
    if (single != nullptr && !single->outgoing) {  // rows are p's candidates
      const EdgeMatrix& m = *graph_.edge(single->edge).matrix;
      for (int y = 0; y < kp; ++y) message_[y] = MinOfSums(v, m.row(y), ku);
    } else {  // rows are u's candidates: the single matrix, or the parallel edges' sum
      for (int c = 0; c < ku; ++c) {
        const double* row = single != nullptr ? graph_.edge(single->edge).matrix->row(c)
                                              : pair_.data() + static_cast<size_t>(c) * kp;
        double vc = v[c];
        for (int y = 0; y < kp; ++y) message_[y] = std::min(message_[y], vc + row[y]);
      }
    }
    double* vp = Value(p);
    for (int y = 0; y < kp; ++y) vp[y] += message_[y];
  }

  // u's best candidate (the first on ties) when its parent takes `y`.
  int Down(int u, int y) const {
    int best = 0;
    double best_cost = std::numeric_limits<double>::infinity();
    const double* v = Value(u);
    for (int c = 0; c < graph_.num_candidates(u); ++c) {
      double cost = v[c];
      for (const Incidence& inc : graph_.incident(u)) {
        if (inc.neighbour == parent_[u]) cost += Edge(inc, c, y);
      }
      if (cost < best_cost) {
        best_cost = cost;
        best = c;
      }
    }
    return best;
  }

  // Adds one of the parallel edges between u and its parent to pair_ (u-major).
  void AddToPair(const Incidence& inc, int ku, int kp) {
    pair_.resize(static_cast<size_t>(ku) * kp, 0);
    const EdgeMatrix& m = *graph_.edge(inc.edge).matrix;
    for (int c = 0; c < ku; ++c) {
      for (int y = 0; y < kp; ++y) {
        pair_[static_cast<size_t>(c) * kp + y] += inc.outgoing ? m.at(c, y) : m.at(y, c);
      }
    }
  }

  // The block's share of the total at the current choice, counted at u:
  // compute, edges to outside nodes, edges to its parent.
  double Current(int u) const {
    int c = choice_[u];
    double total = graph_.node(u).candidates[c].compute_seconds;
    for (const Incidence& inc : graph_.incident(u)) {
      if (!in_block_[inc.neighbour] || inc.neighbour == parent_[u]) {
        total += Edge(inc, c, choice_[inc.neighbour]);
      }
    }
    return total;
  }

  const CostGraph& graph_;
  std::vector<int>& choice_;
  int64_t used_ = 0;
  std::vector<char> in_block_;
  std::vector<int> parent_, position_;
  std::vector<int64_t> offset_;  // per node, into values_ (its K entries); n + 1
  std::vector<double> values_;   // per block node and candidate: its subtree's best
  std::vector<double> pair_, message_;
};

}  // namespace

std::vector<std::vector<int>> ForestBlocks(const CostGraph& graph, bool descending) {
  int n = graph.num_nodes();
  std::vector<int> rank(n);  // the order nodes are placed in
  for (int u = 0; u < n; ++u) rank[u] = descending ? n - 1 - u : u;
  std::vector<std::vector<int>> blocks;
  std::vector<int> block_of(n, -1);
  std::vector<std::vector<int>> roots;  // per block: a union-find parent per node
  auto root = [&](std::vector<int>& parent, int u) {
    while (parent[u] != u) u = parent[u] = parent[parent[u]];
    return u;
  };
  for (int i = 0; i < n; ++i) {
    int u = descending ? n - 1 - i : i;
    std::vector<int> around;  // neighbours already placed, each once
    for (const Incidence& inc : graph.incident(u)) {
      if (rank[inc.neighbour] < i) around.push_back(inc.neighbour);
    }
    std::sort(around.begin(), around.end());
    around.erase(std::unique(around.begin(), around.end()), around.end());
    for (size_t b = 0;; ++b) {
      if (b == blocks.size()) {
        blocks.emplace_back();
        roots.emplace_back(n);
        std::iota(roots[b].begin(), roots[b].end(), 0);
      }
      std::vector<int> joined;  // the trees of block b that u would touch
      for (int w : around) {
        if (block_of[w] == static_cast<int>(b)) joined.push_back(root(roots[b], w));
      }
      std::sort(joined.begin(), joined.end());
      if (std::adjacent_find(joined.begin(), joined.end()) != joined.end()) continue;  // a cycle
      for (int r : joined) roots[b][r] = u;
      blocks[b].push_back(u);
      block_of[u] = b;
      break;
    }
  }
  for (std::vector<int>& block : blocks) std::sort(block.begin(), block.end());
  return blocks;
}

TreeDescent::TreeDescent(const CostGraph& graph) : graph_(graph) {
  for (int s = 0; s < 2; ++s) {
    for (std::vector<int>& nodes : ForestBlocks(graph, /*descending=*/s == 1)) {
      Block block;
      block.watched = nodes;
      for (int u : nodes) {
        for (const Incidence& inc : graph.incident(u)) block.watched.push_back(inc.neighbour);
      }
      std::sort(block.watched.begin(), block.watched.end());
      block.watched.erase(std::unique(block.watched.begin(), block.watched.end()),
                          block.watched.end());
      for (int w : block.watched) {
        block.inside.push_back(std::binary_search(nodes.begin(), nodes.end(), w));
      }
      block.nodes = std::move(nodes);
      splits_[s].push_back(std::move(block));
    }
  }
}

void TreeDescent::Reset() {
  for (std::vector<Block>& split : splits_) {
    for (Block& block : split) {
      block.seen.clear();
      block.cache.solved = false;
    }
  }
  next_ = 0;
}

int TreeDescent::Pass(std::vector<int>& choice) {
  BlockSolver solver(graph_, choice);
  int moved = 0;
  for (Block& block : splits_[next_]) {
    bool inside_same = !block.seen.empty(), outside_same = inside_same;
    for (size_t i = 0; (inside_same || outside_same) && i < block.watched.size(); ++i) {
      if (block.seen[i] == choice[block.watched[i]]) continue;
      (block.inside[i] ? inside_same : outside_same) = false;
    }
    if (inside_same && outside_same) continue;
    // Only its own nodes changed, by moves that each lowered the total with
    // the nodes around it fixed. If it was settled and its share did not
    // grow, solving it again finds the same optimum, which cannot beat the
    // share now (the moves a block makes are those of Solve: the same answer).
    bool skip = false;
    if (outside_same && block.settled) {
      const double share = solver.Share(block.nodes);
      skip = share <= block.share;
      if (skip) block.share = share;
    }
    if (!skip) moved += solver.Solve(block.nodes, block.cache, &block.settled, &block.share);
    block.seen.resize(block.watched.size());
    for (size_t i = 0; i < block.watched.size(); ++i) block.seen[i] = choice[block.watched[i]];
  }
  next_ = 1 - next_;
  return moved;
}

}  // namespace ofl
