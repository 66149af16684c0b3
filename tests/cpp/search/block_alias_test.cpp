// Block aliasing: structural classes, the aliased graph's totals against the
// original graph's, the aliased optimum against brute force over the plans
// in which identical blocks choose alike, and autoddl with aliasing against
// the brute-force optimum where symmetry guarantees a uniform optimum.
#include "search/block_alias.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "search/autoddl.h"
#include "search/exact.h"
#include "tests/cpp/search/graph_makers.h"

namespace ofl {
namespace {

using testing::BruteForce;
using testing::RandomMatrix;
using testing::Uniform;

// `copies` identical blocks of `size` nodes (a random chain with one chord
// when size >= 3), each joined to a shared hub node (node 0) at its first
// node (star) or each block's last node to the next block's first (chain,
// the hub before the first block). copy_of[u]: the copy (-1: hub), role_of[u]:
// the node's place in its block.
struct Repeated {
  CostGraph graph;
  std::vector<int> copy_of, role_of;
};

Repeated MakeRepeated(uint64_t seed, int copies, int size, int max_k, bool star, bool limit) {
  std::mt19937_64 rng(seed);
  Repeated r;
  auto random_candidates = [&](int k) {
    std::vector<Candidate> cands;
    for (int c = 0; c < k; ++c) cands.push_back({Uniform(rng, 0, 10), int64_t(rng() % 8)});
    return cands;
  };
  std::vector<Candidate> hub = random_candidates(2 + rng() % (max_k - 1));
  std::vector<std::vector<Candidate>> roles;
  for (int i = 0; i < size; ++i) roles.push_back(random_candidates(2 + rng() % (max_k - 1)));
  std::vector<EdgeMatrixPtr> inner;
  for (int i = 1; i < size; ++i)
    inner.push_back(RandomMatrix(rng, roles[i - 1].size(), roles[i].size()));
  EdgeMatrixPtr chord =
      size >= 3 ? RandomMatrix(rng, roles[0].size(), roles[size - 1].size()) : nullptr;
  EdgeMatrixPtr attach = RandomMatrix(rng, hub.size(), roles[0].size());
  EdgeMatrixPtr link = RandomMatrix(rng, roles[size - 1].size(), roles[0].size());
  r.graph.AddNode("hub", hub).value();
  r.copy_of.push_back(-1);
  r.role_of.push_back(-1);
  int previous_last = 0;
  for (int b = 0; b < copies; ++b) {
    int first = r.graph.num_nodes();
    for (int i = 0; i < size; ++i) {
      r.graph.AddNode("b" + std::to_string(b) + "_" + std::to_string(i), roles[i]).value();
      r.copy_of.push_back(b);
      r.role_of.push_back(i);
      if (i > 0) r.graph.AddEdge(first + i - 1, first + i, inner[i - 1]).value();
    }
    if (chord) r.graph.AddEdge(first, first + size - 1, chord).value();
    if (star || b == 0) {
      r.graph.AddEdge(0, first, attach).value();
    } else {
      r.graph.AddEdge(previous_last, first, link).value();
    }
    previous_last = first + size - 1;
  }
  if (limit) {
    int64_t low = r.graph.SmallestMemoryNeed(), high = 0;
    for (int u = 0; u < r.graph.num_nodes(); ++u) {
      int64_t most = 0;
      for (const Candidate& c : r.graph.node(u).candidates) most = std::max(most, c.memory_bytes);
      high += most;
    }
    EXPECT_TRUE(r.graph.SetMemoryLimit(low + (high - low) / 2).ok());
  }
  return r;
}

// Brute force over the plans where every copy chooses as copy 0 does (the
// blocks the test built, not the classes the code found).
// `argmin` (when not null) gets the best such plan.
double BruteForceUniform(const Repeated& r, std::vector<int>* argmin = nullptr) {
  const CostGraph& g = r.graph;
  std::vector<int> free_nodes;  // the hub and copy 0
  for (int u = 0; u < g.num_nodes(); ++u) {
    if (r.copy_of[u] <= 0) free_nodes.push_back(u);
  }
  std::vector<int> x(free_nodes.size(), 0), choice(g.num_nodes(), 0);
  double best = std::numeric_limits<double>::infinity();
  while (true) {
    for (size_t i = 0; i < free_nodes.size(); ++i) choice[free_nodes[i]] = x[i];
    for (int u = 0; u < g.num_nodes(); ++u) {
      if (r.copy_of[u] > 0) choice[u] = choice[1 + r.role_of[u]];
    }
    if (g.MemoryBytes(choice) <= g.memory_limit() && g.TotalSeconds(choice) < best) {
      best = g.TotalSeconds(choice);
      if (argmin != nullptr) *argmin = choice;
    }
    size_t i = 0;
    while (i < x.size() && ++x[i] == g.num_candidates(free_nodes[i])) x[i++] = 0;
    if (i == x.size()) break;
  }
  return best;
}

TEST(BlockAliasTest, StarCopiesShareClassesByRole) {
  Repeated r = MakeRepeated(7, /*copies=*/3, /*size=*/4, /*max_k=*/3, /*star=*/true, false);
  NodeClasses classes = StructuralClasses(r.graph, {}, 3);
  ASSERT_EQ(classes.members.size(), 5u);  // the hub and 4 roles
  for (int u = 1; u < r.graph.num_nodes(); ++u) {
    EXPECT_EQ(classes.of[u], classes.of[1 + r.role_of[u]]) << "node " << u;
  }
  EXPECT_EQ(classes.repeated_nodes(), 12);
}

TEST(BlockAliasTest, ChainEndsGetClassesOfTheirOwn) {
  // 6 copies in a chain: copies near the ends see different neighbourhoods
  // within 1 round, the middle ones do not.
  Repeated r = MakeRepeated(11, /*copies=*/6, /*size=*/2, /*max_k=*/3, /*star=*/false, false);
  NodeClasses classes = StructuralClasses(r.graph, {}, 1);
  auto cls = [&](int copy, int role) { return classes.of[1 + copy * 2 + role]; };
  EXPECT_NE(cls(0, 0), cls(1, 0));  // copy 0's first node hangs off the hub
  EXPECT_EQ(cls(2, 0), cls(3, 0));
  EXPECT_EQ(cls(2, 1), cls(3, 1));
  EXPECT_NE(cls(5, 1), cls(4, 1));  // the last node has no successor
}

TEST(BlockAliasTest, AliasedTotalsEqualLiftedTotals) {
  for (uint64_t seed = 0; seed < 40; ++seed) {
    Repeated r = MakeRepeated(seed, 2 + seed % 4, 1 + seed % 4, 4, seed % 2 == 0, seed % 3 == 0);
    AliasedGraph aliased(r.graph, StructuralClasses(r.graph, {}, 1 + seed % 3), {});
    const CostGraph& q = aliased.graph();
    EXPECT_EQ(q.memory_limit(), r.graph.memory_limit());
    std::mt19937_64 rng(seed);
    for (int trial = 0; trial < 20; ++trial) {
      std::vector<int> x(q.num_nodes());
      for (int k = 0; k < q.num_nodes(); ++k) x[k] = rng() % q.num_candidates(k);
      std::vector<int> lifted = aliased.Lift(x);
      const double want = r.graph.TotalSeconds(lifted);
      EXPECT_NEAR(q.TotalSeconds(x), want, 1e-9 * want + 1e-12) << "seed " << seed;
      EXPECT_EQ(q.MemoryBytes(x), r.graph.MemoryBytes(lifted));
      EXPECT_EQ(aliased.Project(lifted), x);
    }
  }
}

TEST(BlockAliasTest, AliasedOptimumEqualsBruteForceOverUniformPlans) {
  for (uint64_t seed = 0; seed < 60; ++seed) {
    const bool limit = seed % 2 == 1;
    Repeated r = MakeRepeated(100 + seed, 2 + seed % 3, 2 + seed % 3, 3, /*star=*/true, limit);
    AliasedGraph aliased(r.graph, StructuralClasses(r.graph, {}, 3), {});
    ASSERT_EQ(aliased.graph().num_nodes(), 1 + r.role_of.back() + 1) << "seed " << seed;
    const double want = BruteForceUniform(r);
    ExactResult e = ExactSearch(aliased.graph()).value();
    ASSERT_TRUE(e.proved_optimal) << "seed " << seed;
    EXPECT_NEAR(r.graph.TotalSeconds(aliased.Lift(e.solution.choice)), want, 1e-9 * want)
        << "seed " << seed;
  }
}

TEST(BlockAliasTest, AutoddlWithAliasingReachesTheOptimumOfSymmetricGraphs) {
  // Star graphs without a memory limit: given the hub's choice each copy
  // solves the same problem alone, so some optimum is uniform; the blocks
  // start finds it and autoddl keeps it.
  for (uint64_t seed = 0; seed < 30; ++seed) {
    Repeated r = MakeRepeated(200 + seed, 3, 2 + seed % 2, 3, /*star=*/true, false);
    const double optimum = BruteForce(r.graph).seconds;
    AutoddlOptions options;
    options.elimination_max_entries = 0;  // no whole-graph elimination start
    options.ball_passes = 0;
    AutoddlResult a = AutoddlSearch(r.graph, options).value();
    EXPECT_GT(a.aliased_nodes, 0);
    bool has_blocks = false;
    for (const AutoddlStart& s : a.starts) {
      if (s.name != "blocks") continue;
      has_blocks = true;
      EXPECT_NEAR(s.start_seconds, optimum, 1e-9 * optimum) << "seed " << seed;
    }
    EXPECT_TRUE(has_blocks);
    EXPECT_NEAR(a.solution.total_seconds, optimum, 1e-9 * optimum) << "seed " << seed;
  }
}

TEST(BlockAliasTest, BlocksStartIsNeverBelowTheOptimumOnChains) {
  for (uint64_t seed = 0; seed < 30; ++seed) {
    Repeated r = MakeRepeated(300 + seed, 3, 2, 3, /*star=*/false, seed % 2 == 0);
    const double optimum = BruteForce(r.graph).seconds;
    AutoddlResult a = AutoddlSearch(r.graph).value();
    for (const AutoddlStart& s : a.starts) {
      EXPECT_GE(s.start_seconds, optimum * (1 - 1e-9)) << s.name << " seed " << seed;
    }
    EXPECT_GE(a.solution.total_seconds, optimum * (1 - 1e-9));
    EXPECT_LE(a.solution.memory_bytes, r.graph.memory_limit());
  }
}

TEST(BlockAliasTest, AliasingLosesNothingAgainstSearchingWithoutIt) {
  // Seeded repeated graphs (stars and chains, half under a memory limit):
  // autoddl with aliasing ends no worse than autoddl without it, and where
  // brute force gives the optimum, neither is below it.
  for (uint64_t seed = 0; seed < 40; ++seed) {
    Repeated r =
        MakeRepeated(400 + seed, 2 + seed % 3, 2 + seed % 2, 3, seed % 2 == 0, seed % 4 >= 2);
    AutoddlOptions with, without;
    without.block_rounds = 0;
    const AutoddlResult a = AutoddlSearch(r.graph, with).value();
    const AutoddlResult b = AutoddlSearch(r.graph, without).value();
    EXPECT_EQ(b.aliased_nodes, 0);
    EXPECT_LE(a.solution.total_seconds, b.solution.total_seconds * (1 + 1e-12)) << "seed " << seed;
    EXPECT_LE(a.solution.memory_bytes, r.graph.memory_limit());
    const double optimum = BruteForce(r.graph).seconds;
    EXPECT_GE(a.solution.total_seconds, optimum * (1 - 1e-9)) << "seed " << seed;
  }
}

TEST(BlockAliasTest, BlockMoveFromTheCallersStartAgainstBruteForce) {
  // Stars, whose classes are the blocks' roles. The caller's start (here
  // the brute-force optimum over the plans in which every copy chooses as
  // copy 0 does) is searched on the aliased graph too, so the blocks start
  // is that optimum: never worse than the start, never better than brute
  // force. Pruning, the elimination and cutset answers and all but
  // single-node moves are off, so that where the aliased search ends depends
  // on its starts: from its own starts alone it missed the optimum on 1 of
  // these 40 seeds.
  for (uint64_t seed = 0; seed < 40; ++seed) {
    Repeated r = MakeRepeated(500 + seed, 2 + seed % 3, 9 + seed % 2, 3, /*star=*/true, false);
    std::vector<int> given;
    const double uniform = BruteForceUniform(r, &given);
    AutoddlOptions options;
    options.prune_dominated = false;
    options.elimination_max_entries = 0;
    options.block_max_entries = 1;  // no cutset answer: the aliased graph is searched
    options.max_tree_passes = 0;    // single-node moves only
    options.ball_passes = 0;
    options.extra_starts.emplace_back("caller", given);
    const AutoddlResult a = AutoddlSearch(r.graph, options).value();
    bool has_blocks = false;
    for (const AutoddlStart& s : a.starts) {
      if (s.name != "blocks") continue;
      has_blocks = true;
      EXPECT_NEAR(s.start_seconds, uniform, 1e-9 * uniform) << "seed " << seed;
    }
    EXPECT_TRUE(has_blocks) << "seed " << seed;
  }
}

TEST(BlockAliasTest, NothingAlikeMeansNoAliasing) {
  CostGraph g;
  g.AddNode("a", {{1, 0}, {2, 0}}).value();
  g.AddNode("b", {{3, 0}, {1, 0}}).value();
  g.AddEdge(0, 1, EdgeMatrix::Create(2, 2, {0, 1, 1, 0}).value()).value();
  EXPECT_EQ(StructuralClasses(g, {}, 3).repeated_nodes(), 0);
  AutoddlResult a = AutoddlSearch(g).value();
  EXPECT_EQ(a.aliased_nodes, 0);
  for (const AutoddlStart& s : a.starts) EXPECT_NE(s.name, "blocks");
}

}  // namespace
}  // namespace ofl
