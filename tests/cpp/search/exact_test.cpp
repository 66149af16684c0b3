// Exact search: hand-worked optima, proof flags, the table cap (branch and
// bound takes over), the budget (not proved, with a lower bound), memory.
#include "search/exact.h"

#include <gtest/gtest.h>

#include "tests/cpp/search/graph_makers.h"

namespace ofl {
namespace {

EdgeMatrixPtr Matrix(int rows, int cols, std::vector<double> data) {
  return EdgeMatrix::Create(rows, cols, std::move(data)).value();
}

// a -> b -> c with 2 candidates each. By hand, the best (a, b, c):
//   b = 0: a: min(1 + 0, 0 + 4) = 1 (a = 0); c: min(0 + 2, 3 + 0) = 2 (c = 0): 5 + 1 + 2 = 8
//   b = 1: a: min(1 + 6, 0 + 0) = 0 (a = 1); c: min(0 + 5, 3 + 1) = 4 (c = 1): 2 + 0 + 4 = 6
// so (1, 1, 1) at 6.
TEST(ExactTest, ChainByHand) {
  CostGraph g;
  int a = g.AddNode("a", {{1, 0}, {0, 0}}).value();
  int b = g.AddNode("b", {{5, 0}, {2, 0}}).value();
  int c = g.AddNode("c", {{0, 0}, {3, 0}}).value();
  ASSERT_TRUE(g.AddEdge(a, b, Matrix(2, 2, {0, 6, 4, 0})).ok());
  ASSERT_TRUE(g.AddEdge(b, c, Matrix(2, 2, {2, 0, 5, 1})).ok());
  ExactResult r = ExactSearch(g).value();
  EXPECT_TRUE(r.proved_optimal);
  EXPECT_EQ(r.method, "elimination");
  EXPECT_EQ(r.solution.choice, (std::vector<int>{1, 1, 1}));
  EXPECT_DOUBLE_EQ(r.solution.total_seconds, 6);
  EXPECT_DOUBLE_EQ(r.lower_bound, 6);
  EXPECT_EQ(r.width, 1);
}

// A triangle: x, y, z with 2 candidates; every edge costs 1 unless both
// ends agree; compute favours x = 1 (0 vs 2) while y and z favour 0 (0 vs
// 1). All 0: 2. All 1: 0 + 1 + 1 = 2. x = 1 alone: 0 + 2 edges = 2. The
// other three choices cost 3 or 5. The optimum is 2 (three ways).
TEST(ExactTest, TriangleByHand) {
  CostGraph g;
  int x = g.AddNode("x", {{2, 0}, {0, 0}}).value();
  int y = g.AddNode("y", {{0, 0}, {1, 0}}).value();
  int z = g.AddNode("z", {{0, 0}, {1, 0}}).value();
  EdgeMatrixPtr differ = Matrix(2, 2, {0, 1, 1, 0});
  ASSERT_TRUE(g.AddEdge(x, y, differ).ok());
  ASSERT_TRUE(g.AddEdge(y, z, differ).ok());
  ASSERT_TRUE(g.AddEdge(z, x, differ).ok());
  ExactResult r = ExactSearch(g).value();
  EXPECT_TRUE(r.proved_optimal);
  EXPECT_DOUBLE_EQ(r.solution.total_seconds, 2);
  EXPECT_EQ(r.width, 2);
  EXPECT_EQ(r.largest_table, 4);
}

TEST(ExactTest, BranchAndBoundTakesOverAboveTheTableCap) {
  CostGraph g = testing::RandomGraph(11, testing::Shape::kCyclic, 7, 4, false, false);
  std::mt19937_64 rng(5);
  for (int a = 0; a < 7; ++a) {  // make it a clique: tables of up to 4^6
    for (int b = a + 1; b < 7; ++b) {
      EdgeMatrixPtr m = testing::RandomMatrix(rng, g.num_candidates(a), g.num_candidates(b));
      ASSERT_TRUE(g.AddEdge(a, b, m).ok());
    }
  }
  double brute = testing::BruteForce(g).seconds;
  ExactOptions options;
  options.max_table_entries = 4;
  ExactResult r = ExactSearch(g, options).value();
  EXPECT_TRUE(r.proved_optimal) << r.note;
  EXPECT_EQ(r.method, "autoddl start + branch and bound");
  EXPECT_EQ(r.largest_table, 0);
  EXPECT_GT(r.branch_nodes, 0);
  EXPECT_NEAR(r.solution.total_seconds, brute, 1e-9 * brute);
  options.max_branch_nodes = 1;
  ExactResult cut = ExactSearch(g, options).value();
  EXPECT_FALSE(cut.proved_optimal);
  EXPECT_NE(cut.note.find("would need a table of"), std::string::npos) << cut.note;
  EXPECT_NE(cut.note.find("branch and bound stopped after 2 nodes"), std::string::npos) << cut.note;
  EXPECT_LE(cut.lower_bound, brute + 1e-9);
  EXPECT_GE(cut.solution.total_seconds, brute - 1e-9);
}

// Same as AutoddlTest.KeepsTheMemoryLimit: the Lagrangian bound at weight
// 2/90 s per byte is 2 * 3.222... - 110 * 2/90 = 4, which closes the gap.
TEST(ExactTest, ProvesUnderABindingMemoryLimit) {
  CostGraph g;
  for (const char* name : {"p", "q"}) ASSERT_TRUE(g.AddNode(name, {{1, 100}, {3, 10}}).ok());
  ASSERT_TRUE(g.SetMemoryLimit(110).ok());
  ExactResult r = ExactSearch(g).value();
  EXPECT_TRUE(r.proved_optimal) << r.note;
  EXPECT_DOUBLE_EQ(r.solution.total_seconds, 4);
  EXPECT_EQ(r.method.rfind("elimination + Lagrangian bound on memory", 0), 0u) << r.method;
  ASSERT_TRUE(g.SetMemoryLimit(10).ok());
  Maybe<ExactResult> none = ExactSearch(g);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("needs is 20 bytes"), std::string::npos);
}

TEST(ExactTest, NodeWithNoCandidatesAndWrongMatrixAreRejectedWhenBuilding) {
  CostGraph g;
  EXPECT_FALSE(g.AddNode("lonely", {}).ok());
  int a = g.AddNode("a", {{1, 0}}).value();
  int b = g.AddNode("b", {{1, 0}, {2, 0}}).value();
  EXPECT_FALSE(g.AddEdge(a, b, Matrix(2, 1, {0, 0})).ok());
  EXPECT_EQ(g.num_edges(), 0);
  EXPECT_TRUE(ExactSearch(g).value().proved_optimal);
}

}  // namespace
}  // namespace ofl
