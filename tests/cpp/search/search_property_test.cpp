// Seeded property tests of the searchers against brute force on small
// random cost graphs: chains, trees and graphs with cycles, with and
// without shared matrices and memory limits.
//   - exact equals brute force (and says it proved it);
//   - exact with a tiny table cap (branch and bound) equals it too;
//   - autoddl is never worse than any of its starts, keeps the limit, and
//     is never better than the optimum;
//   - autoddl reaches the optimum on chains and trees without a limit.
#include <gtest/gtest.h>

#include "search/autoddl.h"
#include "search/exact.h"
#include "tests/cpp/search/graph_makers.h"

namespace ofl {
namespace {

using testing::Shape;

struct Case {
  uint64_t seed;
  Shape shape;
  int n;
  bool share;
  bool limit;
};

std::vector<Case> Cases(int count) {
  std::vector<Case> cases;
  for (int i = 0; i < count; ++i) {
    uint64_t seed = 1000 + i;
    cases.push_back(Case{seed, static_cast<Shape>(i % 3), 1 + (i * 7) % 8, i % 4 < 2, i % 5 >= 3});
  }
  return cases;
}

std::string Describe(const Case& c) {
  const char* shapes[] = {"chain", "tree", "cyclic"};
  return StrCat("seed ", c.seed, " ", shapes[static_cast<int>(c.shape)], " n=", c.n,
                c.share ? " shared" : "", c.limit ? " memory-limited" : "");
}

TEST(SearchPropertyTest, ExactEqualsBruteForce) {
  int proved = 0, limited = 0;
  for (const Case& c : Cases(300)) {
    CostGraph g = testing::RandomGraph(c.seed, c.shape, c.n, 5, c.share, c.limit);
    testing::BruteForceAnswer brute = testing::BruteForce(g);
    ExactResult r = ExactSearch(g).value();
    ASSERT_TRUE(r.proved_optimal) << Describe(c) << ": " << r.note;
    EXPECT_NEAR(r.solution.total_seconds, brute.seconds, 1e-9 * (1 + brute.seconds))
        << Describe(c) << " " << r.method;
    EXPECT_TRUE(r.solution.fits_memory) << Describe(c);
    proved += r.proved_optimal;
    limited += r.method != "elimination";
  }
  EXPECT_EQ(proved, 300);
  EXPECT_GT(limited, 20);  // the memory limit bound in many cases
}

TEST(SearchPropertyTest, BranchAndBoundAloneEqualsBruteForce) {
  ExactOptions options;
  options.max_table_entries = 1;  // no elimination: autoddl start + branch and bound
  options.prune_dominated = false;
  for (const Case& c : Cases(120)) {
    CostGraph g = testing::RandomGraph(c.seed, c.shape, c.n, 5, c.share, c.limit);
    if (g.num_edges() == 0) continue;  // nothing to refuse
    double brute = testing::BruteForce(g).seconds;
    ExactResult r = ExactSearch(g, options).value();
    ASSERT_TRUE(r.proved_optimal) << Describe(c) << ": " << r.note;
    EXPECT_NEAR(r.solution.total_seconds, brute, 1e-9 * (1 + brute)) << Describe(c);
  }
}

TEST(SearchPropertyTest, AutoddlNeverWorseThanItsStartsNorBetterThanOptimum) {
  AutoddlOptions options;
  options.num_random_starts = 2;
  for (const Case& c : Cases(300)) {
    CostGraph g = testing::RandomGraph(c.seed, c.shape, c.n, 5, c.share, c.limit);
    double brute = testing::BruteForce(g).seconds;
    options.seed = c.seed;
    AutoddlResult r = AutoddlSearch(g, options).value();
    EXPECT_TRUE(r.solution.fits_memory) << Describe(c);
    EXPECT_GE(r.solution.total_seconds, brute - 1e-9 * (1 + brute)) << Describe(c);
    ASSERT_EQ(r.starts.size(), 6u);  // the three, two random, elimination (small graphs)
    for (const AutoddlStart& s : r.starts) {
      EXPECT_LE(s.final_seconds, s.start_seconds) << Describe(c) << " " << s.name;
      EXPECT_GE(s.final_seconds, r.solution.total_seconds - 1e-9) << Describe(c) << " " << s.name;
    }
  }
}

TEST(SearchPropertyTest, AutoddlReachesTheOptimumOnChainsAndTrees) {
  int checked = 0;
  for (const Case& c : Cases(300)) {
    if (c.shape == Shape::kCyclic || c.limit) continue;
    CostGraph g = testing::RandomGraph(c.seed, c.shape, c.n, 5, c.share, false);
    double brute = testing::BruteForce(g).seconds;
    AutoddlResult r = AutoddlSearch(g).value();
    EXPECT_NEAR(r.solution.total_seconds, brute, 1e-9 * (1 + brute)) << Describe(c);
    ++checked;
  }
  EXPECT_GT(checked, 100);
  // Longer chains, against exact (elimination proves chains).
  for (uint64_t seed = 0; seed < 20; ++seed) {
    CostGraph g = testing::RandomGraph(seed, Shape::kChain, 300, 12, seed % 2, false);
    ExactResult e = ExactSearch(g).value();
    ASSERT_TRUE(e.proved_optimal);
    AutoddlResult r = AutoddlSearch(g).value();
    EXPECT_NEAR(r.solution.total_seconds, e.solution.total_seconds, 1e-9 * e.solution.total_seconds)
        << "chain seed " << seed;
  }
}

TEST(SearchPropertyTest, PruningChangesNeitherOptimum) {
  ExactOptions off;
  off.prune_dominated = false;
  for (const Case& c : Cases(150)) {
    CostGraph g = testing::RandomGraph(c.seed, c.shape, c.n, 5, c.share, c.limit);
    ExactResult with = ExactSearch(g).value();
    ExactResult without = ExactSearch(g, off).value();
    EXPECT_NEAR(with.solution.total_seconds, without.solution.total_seconds,
                1e-9 * (1 + without.solution.total_seconds))
        << Describe(c);
  }
}

}  // namespace
}  // namespace ofl
