// CostGraph: input errors, the cost breakdown of a hand-worked graph, shared
// matrices, the memory limit and its smallest need, memory sums within
// int64, dominance pruning.
#include "search/cost_graph.h"

#include <gtest/gtest.h>

#include "search/dominance.h"
#include "tests/cpp/search/graph_makers.h"

namespace ofl {
namespace {

EdgeMatrixPtr Matrix(int rows, int cols, std::vector<double> data) {
  return EdgeMatrix::Create(rows, cols, std::move(data)).value();
}

TEST(CostGraphTest, RejectsBadInputNamingIt) {
  CostGraph g;
  Maybe<int> empty = g.AddNode("matmul_0", {});
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.status().message(), "cost graph: node 'matmul_0' has no candidates");
  Maybe<int> negative = g.AddNode("relu", {{-1, 0}});
  ASSERT_FALSE(negative.ok());
  EXPECT_NE(negative.status().message().find("'relu' candidate 0: compute_seconds=-1"),
            std::string::npos);
  int a = g.AddNode("a", {{1, 0}, {2, 0}}).value();
  int b = g.AddNode("b", {{1, 0}, {2, 0}, {3, 0}}).value();
  Maybe<int> wrong = g.AddEdge(a, b, Matrix(3, 2, std::vector<double>(6, 0)));
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.status().message(),
            "cost graph: edge 'a' -> 'b': matrix is 3 x 2, expected 2 x 3 (candidates of 'a' x "
            "candidates of 'b')");
  EXPECT_FALSE(g.AddEdge(a, a, Matrix(2, 2, std::vector<double>(4, 0))).ok());
  EXPECT_FALSE(g.AddEdge(a, 7, Matrix(2, 2, std::vector<double>(4, 0))).ok());
  EXPECT_FALSE(g.AddEdge(a, b, nullptr).ok());
  EXPECT_FALSE(EdgeMatrix::Create(2, 2, {0, 1, 2}).ok());
  Maybe<EdgeMatrixPtr> nan = EdgeMatrix::Create(1, 2, {0, std::nan("")});
  ASSERT_FALSE(nan.ok());
  EXPECT_NE(nan.status().message().find("entry (0, 1)"), std::string::npos);
  EXPECT_FALSE(g.SetMemoryLimit(-1).ok());
  EXPECT_FALSE(g.Evaluate({0}).ok());
  EXPECT_FALSE(g.Evaluate({0, 3}).ok());
}

// x -> y -> z, x -> z; worked by hand for the choice (1, 0, 1).
TEST(CostGraphTest, RefusesMemoryWhoseSumCouldWrapInt64) {
  // 2^62 + 2^62 - 1 = INT64_MAX is the largest sum of largest candidates.
  CostGraph g;
  const int64_t k2p62 = int64_t{1} << 62;
  ASSERT_TRUE(g.AddNode("a", {{0, 0}, {0, k2p62}}).ok());
  Maybe<int> over = g.AddNode("b", {{0, 1}, {0, k2p62}});
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.status().message(),
            "cost graph: node 'b' candidate memory of 4611686018427387904 bytes would bring the "
            "sum of the nodes' largest memory past int64 (4611686018427387904 bytes before it)");
  ASSERT_TRUE(g.AddNode("c", {{0, 1}, {0, k2p62 - 1}}).ok());
  EXPECT_EQ(g.MemoryBytes({1, 1}), INT64_MAX);
}

TEST(CostGraphTest, EvaluatesWithABreakdownByNodeAndEdge) {
  CostGraph g;
  int x = g.AddNode("x", {{1.0, 10}, {2.0, 20}}).value();
  int y = g.AddNode("y", {{0.5, 5}, {0.25, 50}, {4.0, 1}}).value();
  int z = g.AddNode("z", {{3.0, 0}, {1.0, 100}}).value();
  ASSERT_TRUE(g.AddEdge(x, y, Matrix(2, 3, {0, 1, 2, 3, 4, 5})).ok());
  ASSERT_TRUE(g.AddEdge(y, z, Matrix(3, 2, {0.125, 7, 8, 9, 10, 11})).ok());
  ASSERT_TRUE(g.AddEdge(x, z, Matrix(2, 2, {0, 1, 2, 0.5})).ok());
  Solution s = g.Evaluate({1, 0, 1}).value();
  EXPECT_EQ(s.node_seconds, (std::vector<double>{2.0, 0.5, 1.0}));
  EXPECT_EQ(s.edge_seconds, (std::vector<double>{3, 7, 0.5}));
  EXPECT_DOUBLE_EQ(s.compute_seconds, 3.5);
  EXPECT_DOUBLE_EQ(s.transfer_seconds, 10.5);
  EXPECT_DOUBLE_EQ(s.total_seconds, 14.0);
  EXPECT_EQ(s.memory_bytes, 125);
  EXPECT_TRUE(s.fits_memory);
  EXPECT_DOUBLE_EQ(g.TotalSeconds({1, 0, 1}), 14.0);
  // y's local cost with x = 1, z = 1: compute + x->y column + y->z row.
  EXPECT_DOUBLE_EQ(g.LocalSeconds(y, 2, {1, 0, 1}), 4.0 + 5 + 11);
  EXPECT_EQ(g.SmallestMemoryNeed(), 10 + 1 + 0);
  ASSERT_TRUE(g.SetMemoryLimit(100).ok());
  EXPECT_FALSE(g.Evaluate({1, 0, 1}).value().fits_memory);
  std::string text = s.ToString(g, 2);
  EXPECT_NE(text.find("total 14 s = compute 3.5 s + transfer 10.5 s"), std::string::npos) << text;
  EXPECT_NE(text.find("node x: candidate 1, 2 s"), std::string::npos) << text;
  EXPECT_NE(text.find("edge y -> z: 7 s"), std::string::npos) << text;
}

TEST(CostGraphTest, InfeasibleMemoryLimitGivesTheSmallestNeed) {
  CostGraph g;
  ASSERT_TRUE(g.AddNode("a", {{1, 300}, {2, 100}}).ok());
  ASSERT_TRUE(g.AddNode("b", {{1, 50}, {1, 70}}).ok());
  ASSERT_TRUE(g.SetMemoryLimit(149).ok());
  Status s = g.CheckMemoryFeasible();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("the smallest per-device memory any assignment needs is 150 bytes"),
            std::string::npos)
      << s.message();
  ASSERT_TRUE(g.SetMemoryLimit(150).ok());
  EXPECT_TRUE(g.CheckMemoryFeasible().ok());
}

// Identical layers share one matrix object and still choose apart.
TEST(CostGraphTest, SharedMatricesDoNotForceASharedChoice) {
  EdgeMatrixPtr m = Matrix(2, 2, {0, 1, 1, 0});
  CostGraph g;
  for (int i = 0; i < 4; ++i)
    ASSERT_TRUE(g.AddNode("n" + std::to_string(i), {{0, 0}, {0, 0}}).ok());
  for (int i = 0; i + 1 < 4; ++i) ASSERT_TRUE(g.AddEdge(i, i + 1, m).ok());
  EXPECT_EQ(g.edge(0).matrix.get(), g.edge(2).matrix.get());
  Solution s = g.Evaluate({0, 0, 1, 1}).value();
  EXPECT_EQ(s.edge_seconds, (std::vector<double>{0, 1, 0}));
}

// Candidate 1 of `a` is worse than 0 in compute, memory and every edge
// entry: pruned. Candidate 2 duplicates 0: pruned (the later goes).
// Candidate 3 is cheaper to compute but costlier to move: kept.
TEST(DominanceTest, PrunesOnlyProvenlyDominatedCandidates) {
  CostGraph g;
  int a = g.AddNode("a", {{1, 10}, {2, 10}, {1, 10}, {0.5, 10}}).value();
  int b = g.AddNode("b", {{1, 0}, {1, 0}}).value();
  ASSERT_TRUE(g.AddEdge(a, b, Matrix(4, 2, {0, 1, 0, 1, 0, 1, 5, 5})).ok());
  PrunedGraph p = PruneDominated(g);
  EXPECT_EQ(p.kept[a], (std::vector<int>{0, 3}));
  EXPECT_EQ(p.kept[b], (std::vector<int>{0}));  // b's 1 then loses to 0 on the kept rows
  EXPECT_EQ(p.num_pruned, 3);
  EXPECT_EQ(p.graph.edge(0).matrix->rows(), 2);
  EXPECT_EQ(p.ToOriginal({1, 0}), (std::vector<int>{3, 0}));
}

TEST(DominanceTest, NeverRemovesTheOptimum) {
  int checked = 0;
  for (uint64_t seed = 0; seed < 150; ++seed) {
    testing::Shape shape = static_cast<testing::Shape>(seed % 3);
    CostGraph g = testing::RandomGraph(seed, shape, 2 + seed % 6, 4, seed % 2, seed % 4 == 1);
    PrunedGraph p = PruneDominated(g);
    double full = testing::BruteForce(g).seconds;
    double reduced = testing::BruteForce(p.graph).seconds;
    EXPECT_NEAR(reduced, full, 1e-9 * full) << "seed " << seed;
    checked += p.num_pruned > 0;
  }
  EXPECT_GT(checked, 20);  // pruning did happen in many of them
}

}  // namespace
}  // namespace ofl
