// AutoDDL search: hand-worked coordinate descent, the local optimum a
// single-node move cannot leave (and the start that avoids it), the memory
// limit, its error, determinism.
#include "search/autoddl.h"

#include <gtest/gtest.h>

namespace ofl {
namespace {

EdgeMatrixPtr Matrix(int rows, int cols, std::vector<double> data) {
  return EdgeMatrix::Create(rows, cols, std::move(data)).value();
}

// a -> b -> c. From (0, 0, 0), cost 0 + 3 + 0 + 0 + 0 = 3: a stays (0 vs
// 5 + 1), b moves to 1 (1 + 1 = 2 < 3), c has nothing to gain. The second
// sweep revisits a and c (b's neighbours) and nothing moves: (0, 1, 0) at 2.
TEST(AutoddlTest, CoordinateDescentByHand) {
  CostGraph g;
  int a = g.AddNode("a", {{0, 0}, {5, 0}}).value();
  int b = g.AddNode("b", {{3, 0}, {1, 0}}).value();
  int c = g.AddNode("c", {{0, 0}, {0, 0}}).value();
  ASSERT_TRUE(g.AddEdge(a, b, Matrix(2, 2, {0, 1, 1, 0})).ok());
  ASSERT_TRUE(g.AddEdge(b, c, Matrix(2, 2, {0, 0, 0, 0})).ok());
  std::vector<int> choice = {0, 0, 0};
  int64_t moves = 0;
  EXPECT_EQ(CoordinateDescent(g, choice, 100, &moves), 2);
  EXPECT_EQ(moves, 1);
  EXPECT_EQ(choice, (std::vector<int>{0, 1, 0}));
  EXPECT_DOUBLE_EQ(g.TotalSeconds(choice), 2);
  AutoddlResult r = AutoddlSearch(g).value();
  EXPECT_EQ(r.solution.choice, (std::vector<int>{0, 1, 0}));
  EXPECT_DOUBLE_EQ(r.solution.total_seconds, 2);
}

// x - y, both cheaper as 1, but switching one alone costs 10: from (0, 0)
// no single move helps (2 -> 11). The spanning-tree start is the optimum.
TEST(AutoddlTest, SpanningTreeStartEscapesTheSingleMoveTrap) {
  CostGraph g;
  int x = g.AddNode("x", {{1, 0}, {0, 0}}).value();
  int y = g.AddNode("y", {{1, 0}, {0, 0}}).value();
  ASSERT_TRUE(g.AddEdge(x, y, Matrix(2, 2, {0, 10, 10, 0})).ok());
  std::vector<int> stuck = {0, 0};
  CoordinateDescent(g, stuck, 100, nullptr);
  EXPECT_EQ(stuck, (std::vector<int>{0, 0}));
  AutoddlResult r = AutoddlSearch(g).value();
  EXPECT_EQ(r.solution.choice, (std::vector<int>{1, 1}));
  EXPECT_EQ(r.starts[r.best_start].name, "spanning_tree");
  EXPECT_EQ(r.solution.total_seconds, 0);
  ASSERT_EQ(r.starts.size(), 4u);  // spanning_tree, greedy, min_memory, elimination
  EXPECT_EQ(r.starts[3].name, "elimination");
  for (const AutoddlStart& s : r.starts) EXPECT_LE(s.final_seconds, s.start_seconds) << s.name;
}

// Two independent nodes: fast (1 s, 100 B) or small (3 s, 10 B); a limit
// of 110 B lets one be fast: 4 s.
TEST(AutoddlTest, KeepsTheMemoryLimit) {
  CostGraph g;
  for (const char* name : {"p", "q"}) ASSERT_TRUE(g.AddNode(name, {{1, 100}, {3, 10}}).ok());
  ASSERT_TRUE(g.SetMemoryLimit(110).ok());
  AutoddlResult r = AutoddlSearch(g).value();
  EXPECT_DOUBLE_EQ(r.solution.total_seconds, 4);
  EXPECT_EQ(r.solution.memory_bytes, 110);
  EXPECT_TRUE(r.solution.fits_memory);
  ASSERT_TRUE(g.SetMemoryLimit(19).ok());
  Maybe<AutoddlResult> none = AutoddlSearch(g);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("smallest per-device memory any assignment needs is 20"),
            std::string::npos)
      << none.status().message();
}

TEST(AutoddlTest, CountsPrunedCandidatesAndIsDeterministic) {
  CostGraph g;
  int a = g.AddNode("a", {{1, 5}, {2, 5}, {1, 5}}).value();  // 1 and 2 are dominated by 0
  int b = g.AddNode("b", {{2, 0}, {1, 0}}).value();
  ASSERT_TRUE(g.AddEdge(a, b, Matrix(3, 2, {0, 3, 0, 3, 0, 3})).ok());
  AutoddlOptions options;
  options.num_random_starts = 3;
  options.seed = 7;
  AutoddlResult first = AutoddlSearch(g, options).value();
  AutoddlResult second = AutoddlSearch(g, options).value();
  EXPECT_EQ(first.num_pruned, 2);
  EXPECT_EQ(first.solution.choice, second.solution.choice);
  EXPECT_EQ(first.solution.choice, (std::vector<int>{0, 0}));
  EXPECT_DOUBLE_EQ(first.solution.total_seconds, 3);
  options.prune_dominated = false;
  AutoddlResult unpruned = AutoddlSearch(g, options).value();
  EXPECT_EQ(unpruned.num_pruned, 0);
  EXPECT_DOUBLE_EQ(unpruned.solution.total_seconds, 3);
}

TEST(AutoddlTest, EmptyGraph) {
  CostGraph g;
  AutoddlResult r = AutoddlSearch(g).value();
  EXPECT_TRUE(r.solution.choice.empty());
  EXPECT_EQ(r.solution.total_seconds, 0);
}

}  // namespace
}  // namespace ofl

namespace ofl {
namespace {

// Extra starts (graph/ passes the best expert preset's choice): run after
// the built-in ones under their names, from the unpruned graph (candidate 1
// of `a` is dominated and pruned, yet a start may pick it), never worse than
// where they start; bad ones are errors naming them.
TEST(AutoddlTest, ExtraStartsRunFromTheUnprunedGraph) {
  CostGraph g;
  int a = g.AddNode("a", {{1, 0}, {2, 0}}).value();  // candidate 1 dominated
  int b = g.AddNode("b", {{1, 0}, {1, 0}}).value();
  ASSERT_TRUE(g.AddEdge(a, b, EdgeMatrix::Create(2, 2, {0, 3, 3, 0}).value()).ok());
  AutoddlOptions o;
  o.extra_starts.push_back({"given", {1, 1}});  // total 2 + 1 + 0 = 3
  AutoddlResult r = AutoddlSearch(g, o).value();
  ASSERT_EQ(r.starts.size(), 5u);  // the built-in three, "given", elimination
  EXPECT_EQ(r.starts[3].name, "given");
  EXPECT_DOUBLE_EQ(r.starts[3].start_seconds, 3);
  EXPECT_LE(r.starts[3].final_seconds, 3);
  EXPECT_DOUBLE_EQ(r.solution.total_seconds, 2);  // (0, 0): 1 + 1
  EXPECT_LE(r.solution.total_seconds, r.starts[3].final_seconds);

  o.extra_starts = {{"short", {0}}};
  auto e1 = AutoddlSearch(g, o);
  ASSERT_FALSE(e1.ok());
  EXPECT_EQ(e1.status().message(), "autoddl: start 'short' has 1 candidates for 2 nodes");
  o.extra_starts = {{"far", {0, 5}}};
  auto e2 = AutoddlSearch(g, o);
  ASSERT_FALSE(e2.ok());
  EXPECT_EQ(e2.status().message(),
            "autoddl: start 'far' picks candidate 5 of node 'b' (2 candidates)");
  CostGraph m;
  ASSERT_TRUE(m.AddNode("p", {{1, 100}, {3, 10}}).ok());
  ASSERT_TRUE(m.SetMemoryLimit(50).ok());
  o.extra_starts = {{"big", {0}}};
  auto e3 = AutoddlSearch(m, o);
  ASSERT_FALSE(e3.ok());
  EXPECT_NE(e3.status().message().find("start 'big' needs"), std::string::npos);
}

}  // namespace
}  // namespace ofl
