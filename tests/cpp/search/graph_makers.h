// Test helpers for search/: seeded random cost graphs (chains, trees, graphs
// with cycles, shared matrices, memory limits), a brute-force optimum, and
// large synthetic graphs shaped like a transformer's training step (a
// forward chain with residual skips, a mirrored backward chain, and weight
// and optimizer nodes per layer) or a ladder. Header-only; not thread-safe
// (each call builds its own graph).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "search/cost_graph.h"

namespace ofl::testing {

enum class Shape { kChain, kTree, kCyclic };

inline double Uniform(std::mt19937_64& rng, double lo, double hi) {
  return lo + (hi - lo) * static_cast<double>(rng() >> 11) * 0x1p-53;
}

inline EdgeMatrixPtr RandomMatrix(std::mt19937_64& rng, int rows, int cols) {
  std::vector<double> data(static_cast<size_t>(rows) * cols);
  for (double& x : data) x = (rng() % 4 == 0) ? 0.0 : Uniform(rng, 0, 10);
  return EdgeMatrix::Create(rows, cols, std::move(data)).value();
}

// n nodes with 1..max_k candidates; integer-ish memory sizes so limits bind.
// Some nodes share a candidate count and reuse one matrix per (rows, cols).
inline CostGraph RandomGraph(uint64_t seed, Shape shape, int n, int max_k, bool share,
                             bool memory_limit) {
  std::mt19937_64 rng(seed);
  CostGraph g;
  for (int i = 0; i < n; ++i) {
    int k = 1 + rng() % max_k;
    std::vector<Candidate> cands;
    for (int c = 0; c < k; ++c) {
      cands.push_back(Candidate{Uniform(rng, 0, 10), static_cast<int64_t>(rng() % 8)});
    }
    EXPECT_TRUE(g.AddNode("n" + std::to_string(i), cands).ok());
  }
  std::vector<std::vector<EdgeMatrixPtr>> shared(max_k + 1, std::vector<EdgeMatrixPtr>(max_k + 1));
  auto add_edge = [&](int a, int b) {
    if (rng() % 2) std::swap(a, b);
    int r = g.num_candidates(a), c = g.num_candidates(b);
    EdgeMatrixPtr m;
    if (share) {
      if (!shared[r][c]) shared[r][c] = RandomMatrix(rng, r, c);
      m = shared[r][c];
    } else {
      m = RandomMatrix(rng, r, c);
    }
    EXPECT_TRUE(g.AddEdge(a, b, m).ok());
  };
  for (int i = 1; i < n; ++i) {
    add_edge(shape == Shape::kChain ? i - 1 : static_cast<int>(rng() % i), i);
  }
  if (shape == Shape::kCyclic) {
    int extra = 1 + rng() % n;
    for (int e = 0; e < extra; ++e) {
      int a = rng() % n, b = rng() % n;
      if (a != b) add_edge(a, b);  // parallel edges allowed
    }
  }
  if (memory_limit) {
    int64_t low = g.SmallestMemoryNeed(), high = 0;
    for (int i = 0; i < n; ++i) {
      int64_t most = 0;
      for (const Candidate& c : g.node(i).candidates) most = std::max(most, c.memory_bytes);
      high += most;
    }
    EXPECT_TRUE(g.SetMemoryLimit(low + static_cast<int64_t>(rng() % (high - low + 1))).ok());
  }
  return g;
}

struct BruteForceAnswer {
  std::vector<int> choice;
  double seconds = std::numeric_limits<double>::infinity();
};

// Every assignment within the memory limit; the cheapest (first on ties).
inline BruteForceAnswer BruteForce(const CostGraph& g) {
  BruteForceAnswer best;
  std::vector<int> x(g.num_nodes(), 0);
  while (true) {
    if (g.MemoryBytes(x) <= g.memory_limit()) {
      double s = g.TotalSeconds(x);
      if (s < best.seconds) best.seconds = s, best.choice = x;
    }
    int i = 0;
    while (i < g.num_nodes() && ++x[i] == g.num_candidates(i)) x[i++] = 0;
    if (i == g.num_nodes()) break;
  }
  return best;
}

// A transfer-time table between `layouts` tensor layouts (0 on the
// diagonal), and matrices built from it as graph/ would build them: each
// candidate reads its input in one layout and writes its output in another.
struct LayoutModel {
  int layouts = 0;
  std::vector<double> transfer;  // layouts x layouts seconds per unit size
  std::vector<int> in, out;      // per candidate index (shared by all nodes of K)

  LayoutModel(std::mt19937_64& rng, int num_layouts, int k) : layouts(num_layouts) {
    transfer.resize(num_layouts * num_layouts);
    for (int a = 0; a < num_layouts; ++a) {
      for (int b = 0; b < num_layouts; ++b)
        transfer[a * num_layouts + b] = a == b ? 0 : Uniform(rng, 1, 4);
    }
    for (int c = 0; c < k; ++c) {
      in.push_back(c % num_layouts);
      out.push_back((c / num_layouts + c) % num_layouts);
    }
  }
  EdgeMatrixPtr Matrix(int k, double scale) const {
    std::vector<double> data;
    for (int a = 0; a < k; ++a) {
      for (int b = 0; b < k; ++b) data.push_back(scale * transfer[out[a] * layouts + in[b]]);
    }
    return EdgeMatrix::Create(k, k, std::move(data)).value();
  }
};

// A transformer-like training step: per layer `ops` forward ops in a chain
// with a residual skip over the layer, the mirrored backward chain with an
// edge from each forward op to its backward op (saved activations), and per
// layer a weight node and an optimizer node joined to a forward and a
// backward op. Every node has k candidates; one matrix per edge kind is
// shared by all layers; compute times repeat per layer.
inline CostGraph TransformerLike(int layers, int ops, int k, uint64_t seed) {
  std::mt19937_64 rng(seed);
  LayoutModel model(rng, std::max(2, std::min(k, 10)), k);
  std::vector<EdgeMatrixPtr> kinds;
  for (int i = 0; i < 4; ++i) kinds.push_back(model.Matrix(k, Uniform(rng, 0.5, 2)));
  std::vector<std::vector<Candidate>> per_op(ops + 2);
  for (auto& cands : per_op) {
    for (int c = 0; c < k; ++c) cands.push_back({Uniform(rng, 0.1, 3), int64_t(1 + rng() % 64)});
  }
  CostGraph g;
  auto node = [&](const std::string& name, int kind) {
    return g.AddNode(name, per_op[kind]).value();
  };
  std::vector<int> forward, backward;
  int previous = -1;
  for (int l = 0; l < layers; ++l) {
    int layer_in = previous;
    for (int o = 0; o < ops; ++o) {
      int f = node("f" + std::to_string(l) + "_" + std::to_string(o), o);
      if (previous >= 0) {
        EXPECT_TRUE(g.AddEdge(previous, f, kinds[0]).ok());
      }
      previous = f;
      forward.push_back(f);
    }
    if (layer_in >= 0) {
      EXPECT_TRUE(g.AddEdge(layer_in, previous, kinds[1]).ok());
    }
  }
  for (int i = static_cast<int>(forward.size()) - 1; i >= 0; --i) {
    int b = node("b" + std::to_string(i), i % ops);
    if (!backward.empty()) {
      EXPECT_TRUE(g.AddEdge(backward.back(), b, kinds[0]).ok());
    }
    EXPECT_TRUE(g.AddEdge(forward[i], b, kinds[2]).ok());
    backward.push_back(b);
  }
  for (int l = 0; l < layers; ++l) {
    int w = node("w" + std::to_string(l), ops);
    int u = node("update" + std::to_string(l), ops + 1);
    int f = forward[l * ops + 1], b = backward[backward.size() - 1 - (l * ops + 1)];
    EXPECT_TRUE(g.AddEdge(w, f, kinds[3]).ok());
    EXPECT_TRUE(g.AddEdge(b, u, kinds[3]).ok());
    EXPECT_TRUE(g.AddEdge(w, u, kinds[2]).ok());
  }
  return g;
}

// Two chains of `length` joined by a rung at every step (treewidth 2).
inline CostGraph Ladder(int length, int k, uint64_t seed) {
  std::mt19937_64 rng(seed);
  LayoutModel model(rng, std::max(2, std::min(k, 10)), k);
  EdgeMatrixPtr along = model.Matrix(k, 1), rung = model.Matrix(k, 0.5);
  std::vector<Candidate> cands;
  for (int c = 0; c < k; ++c) cands.push_back({Uniform(rng, 0.1, 3), int64_t(1 + rng() % 64)});
  CostGraph g;
  for (int i = 0; i < length; ++i) {
    int a = g.AddNode("a" + std::to_string(i), cands).value();
    int b = g.AddNode("b" + std::to_string(i), cands).value();
    EXPECT_TRUE(g.AddEdge(a, b, rung).ok());
    if (i > 0) {
      EXPECT_TRUE(g.AddEdge(a - 2, a, along).ok());
      EXPECT_TRUE(g.AddEdge(b, b - 2, along).ok());
    }
  }
  return g;
}

}  // namespace ofl::testing
