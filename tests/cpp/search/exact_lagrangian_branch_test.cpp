// Exact search under a binding memory limit by the Lagrangian branch and
// bound (lagrangian_branch.h): on seeded graphs with a duality gap it proves
// the brute-force optimum with the plain branch and bound switched off; the
// root dual's bound is the maximum of the dual function, both checked
// against brute force over every assignment.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "search/elimination.h"
#include "search/exact.h"
#include "search/lagrangian_branch.h"
#include "tests/cpp/search/graph_makers.h"

namespace ofl {
namespace {

// min over every assignment of cost + w (memory - limit), by enumeration.
double BruteDual(const CostGraph& g, double w) {
  const double limit = static_cast<double>(g.memory_limit());
  double least = std::numeric_limits<double>::infinity();
  std::vector<int> x(g.num_nodes(), 0);
  while (true) {
    least =
        std::min(least, g.TotalSeconds(x) + w * (static_cast<double>(g.MemoryBytes(x)) - limit));
    int i = 0;
    while (i < g.num_nodes() && ++x[i] == g.num_candidates(i)) x[i++] = 0;
    if (i == g.num_nodes()) break;
  }
  return least;
}

TEST(ExactLagrangianBranch, ProvesTheBruteForceOptimumAlone) {
  int branched = 0;
  for (uint64_t seed = 0; seed < 300; ++seed) {
    const auto shape = static_cast<testing::Shape>(seed % 3);
    CostGraph g = testing::RandomGraph(seed, shape, 9, 4, seed % 2 == 0, true);
    testing::BruteForceAnswer brute = testing::BruteForce(g);
    ExactOptions options;
    options.max_branch_nodes = 0;  // only the Lagrangian branch and bound may prove
    ExactResult r = ExactSearch(g, options).value();
    ASSERT_TRUE(r.proved_optimal) << "seed " << seed << ": " << r.note;
    EXPECT_NEAR(r.solution.total_seconds, brute.seconds, 1e-9 * brute.seconds) << "seed " << seed;
    EXPECT_TRUE(r.solution.fits_memory);
    if (r.bound == "Lagrangian branch and bound (finished)") ++branched;
  }
  // Instances with a duality gap must be exercised (when written: 100).
  std::printf("proved by the Lagrangian branch and bound: %d of 300\n", branched);
  EXPECT_GE(branched, 40);
}

TEST(ExactLagrangianBranch, RootBoundIsTheDualMaximum) {
  int checked = 0;
  for (uint64_t seed = 0; seed < 120; ++seed) {
    CostGraph g = testing::RandomGraph(seed, testing::Shape::kCyclic, 8, 4, false, true);
    EliminationPlan plan = EliminationPlan::Make(g, {}, 1 << 20, 1 << 24).value();
    double objective = 0;
    std::vector<int> x = plan.Solve(0, &objective);
    if (g.MemoryBytes(x) <= g.memory_limit()) continue;  // the limit does not bind
    DualAnswer dual = LagrangianRootDual(g, plan, nullptr, 64, nullptr);
    ASSERT_TRUE(dual.converged) << "seed " << seed;
    const double tol = 1e-9 * std::fabs(dual.bound) + 1e-12;
    EXPECT_NEAR(dual.bound, BruteDual(g, dual.weight), tol) << "seed " << seed;
    EXPECT_LE(dual.bound, testing::BruteForce(g).seconds + tol) << "seed " << seed;
    // No weight does better: around the answer's and over a log grid.
    const double around[] = {0.5, 0.9, 0.99, 1.01, 1.1, 2.0};
    for (double f : around) EXPECT_LE(BruteDual(g, dual.weight * f), dual.bound + tol);
    for (double w = 1e-6; w < 1e6; w *= 1.5) EXPECT_LE(BruteDual(g, w), dual.bound + tol);
    ++checked;
  }
  EXPECT_GE(checked, 30);
}

TEST(ExactLagrangianBranch, StopsUnprovedWithAValidBound) {
  // One subproblem only: the answer still fits and the bound is below it.
  for (uint64_t seed = 0; seed < 60; ++seed) {
    CostGraph g = testing::RandomGraph(seed, testing::Shape::kCyclic, 9, 4, true, true);
    testing::BruteForceAnswer brute = testing::BruteForce(g);
    ExactOptions options;
    options.max_branch_nodes = 0;
    options.max_lagrangian_branch_nodes = 1;
    ExactResult r = ExactSearch(g, options).value();
    EXPECT_TRUE(r.solution.fits_memory);
    EXPECT_GE(r.solution.total_seconds, brute.seconds * (1 - 1e-9)) << "seed " << seed;
    EXPECT_LE(r.lower_bound, brute.seconds * (1 + 1e-9)) << "seed " << seed;
    if (r.proved_optimal) {
      EXPECT_NEAR(r.solution.total_seconds, brute.seconds, 1e-9 * brute.seconds);
    }
  }
}

}  // namespace
}  // namespace ofl
