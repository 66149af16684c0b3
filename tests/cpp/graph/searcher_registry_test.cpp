// The searcher registry (graph/searcher.h): a toy searcher registered in
// this one file, with its own options, plans through PlanStrategy like a
// built-in one; names are listed in order; registration errors. Hand-worked
// values on x [4, 2] @ w [2, 2] (forward only) on 2 ranks of a cluster of
// 1 GFLOP/s, 1 GB/s, latency 0: replicating everything computes the whole
// matmul, 2*4*2*2 = 32 FLOPs, on each rank (32 ns), and feeds x whole: its
// 32 bytes at 1 GB/s (32 ns) plus the all-gather from its arrival S(0), 16
// bytes per rank (16 ns); 80 ns in all. Feeding x split instead (the toy's
// option) costs its 16-byte slice (16 ns), then the same all-gather to the
// matmul's B (16 ns) and the whole matmul (32 ns): 64 ns.
#include <gtest/gtest.h>

#include <algorithm>

#include "graph/searcher.h"
#include "model_makers.h"

namespace ofl {
namespace {

constexpr char kCluster[] = R"(name: "test1d"
levels { name: "link" size: 0 bandwidth_gbps: 1.0 latency_us: 0 }
device { name: "d" flops { key: "float32" value: 1e9 } memory_bytes: 1073741824 }
)";

struct ToyOptions {
  bool split_inputs = false;  // fed inputs S(0) instead of B
};

// Every node's first candidate whose layouts are all B (a fed input S(0)
// under split_inputs), among those the pins allow.
class ToySearcher : public Searcher {
 public:
  ToySearcher() : Searcher("toy_replicate", "replicates everything") {}

  Maybe<std::vector<int>> Search(const SearchInput& input) const override {
    const auto& options = input.options.searcher_options.Get<ToyOptions>();
    OFL_ASSIGN_OR_RETURN(auto allowed,
                         AllowedCandidates(input.graph, input.model, input.options.pinned));
    std::vector<int> choice;
    for (size_t u = 0; u < input.model.nodes().size(); ++u) {
      const CostNodeInfo& n = input.model.nodes()[u];
      const bool split = options.split_inputs && n.kind == CostNodeKind::kInput;
      const std::string want = split ? "(S(0))" : "(B)";
      int pick = -1;
      for (int c = 0; c < input.model.graph().num_candidates(static_cast<int>(u)); ++c) {
        const std::string layout =
            n.signatures.empty() ? n.sbps[c].ToString() : n.signatures[c].ToString();
        const bool kept = allowed[u].empty() ||
                          std::find(allowed[u].begin(), allowed[u].end(), c) != allowed[u].end();
        const bool all_b =
            layout.find("S(") == std::string::npos && layout.find('P') == std::string::npos;
        if (kept && (split ? layout == want : all_b)) {
          pick = c;
          break;
        }
      }
      OFL_ENSURE(pick >= 0, "toy_replicate: node '", n.name, "' has no ", want, " candidate");
      choice.push_back(pick);
    }
    input.stats->note = "toy";
    return choice;
  }
};

OFL_REGISTER_SEARCHER(SearcherRegistry::kUserOrder, std::make_shared<ToySearcher>());

OpGraph OneMatmul() {
  OpGraph g;
  CHECK(g.AddInput("x", {Shape{4, 2}, DataType::kFloat32}).ok());
  CHECK(g.AddVariable("w", TensorDesc{Shape{2, 2}, DataType::kFloat32}, false).ok());
  CHECK(g.AddOp("matmul", {"x", "w"}, {}, "mm").ok());
  return g;
}

Maybe<PlannedStrategy> PlanToy(const PlanOptions& options) {
  OFL_ASSIGN_OR_RETURN(Cluster cluster, Cluster::Parse(kCluster, "test1d"));
  return PlanStrategy(OneMatmul(), testing::Mesh({2}), cluster, options);
}

TEST(SearcherRegistryTest, AToySearcherPlansLikeABuiltInOne) {
  PlanOptions o;
  o.searcher = "toy_replicate";
  PlannedStrategy p = PlanToy(o).value();
  EXPECT_EQ(p.searcher, "toy_replicate");
  EXPECT_EQ(p.strategy.sources().at("x").ToString(), "(B)");
  EXPECT_EQ(p.strategy.sources().at("w").ToString(), "(B)");
  EXPECT_EQ(p.strategy.signature("mm").ToString(), "(B), (B) -> (B)");
  EXPECT_NEAR(p.solution.total_seconds, 80e-9, 1e-15);
  EXPECT_EQ(p.stats.note, "toy");
  EXPECT_EQ(p.stats.cost_nodes, 3);
  // Its own options, set by type.
  o.searcher_options.Mutable<ToyOptions>().split_inputs = true;
  PlannedStrategy q = PlanToy(o).value();
  EXPECT_EQ(q.strategy.sources().at("x").ToString(), "(S(0))");
  EXPECT_EQ(q.strategy.signature("mm").ToString(), "(B), (B) -> (B)");
  EXPECT_NEAR(q.solution.total_seconds, 64e-9, 1e-15);
}

TEST(SearcherRegistryTest, NamesAreListedBuiltInFirst) {
  const std::vector<std::string> names = SearcherNames();
  ASSERT_GE(names.size(), 13u);
  EXPECT_EQ(names[0], "autoddl");
  EXPECT_EQ(names[1], "exact");
  EXPECT_EQ(names[11], "manual");
  EXPECT_EQ(names.back(), "toy_replicate");
  for (const SearcherInfo& s : SearcherRegistry::List()) {
    EXPECT_FALSE(s.description.empty()) << s.name;
    EXPECT_EQ(s.description.find('\n'), std::string::npos) << s.name;
  }
}

TEST(SearcherRegistryTest, RegistrationErrorsNameTheSearcher) {
  Status taken = SearcherRegistry::Register(std::make_shared<ToySearcher>());
  EXPECT_EQ(taken.message(), "register searcher: 'toy_replicate' is already registered");
  Status built_in = SearcherRegistry::Unregister("autoddl");
  EXPECT_NE(built_in.message().find("'autoddl' is built in"), std::string::npos);
  EXPECT_NE(SearcherRegistry::Unregister("nope").message().find("'nope' is not registered"),
            std::string::npos);
  auto unknown = SearcherRegistry::Find("nope");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("valid: autoddl, exact,"), std::string::npos);
  EXPECT_NE(unknown.status().message().find(", manual, toy_replicate"), std::string::npos);
}

TEST(SearcherRegistryTest, RunTimeSearchersComeAndGo) {
  class Renamed : public Searcher {
   public:
    Renamed() : Searcher("toy_run_time", "a run-time registration") {}
    Maybe<std::vector<int>> Search(const SearchInput& input) const override {
      return std::vector<int>(input.model.nodes().size(), 0);
    }
  };
  ASSERT_TRUE(SearcherRegistry::Register(std::make_shared<Renamed>()).ok());
  PlanOptions o;
  o.searcher = "toy_run_time";
  EXPECT_TRUE(PlanToy(o).ok());
  ASSERT_TRUE(SearcherRegistry::Unregister("toy_run_time").ok());
  EXPECT_FALSE(PlanToy(o).ok());
}

TEST(SearcherRegistryTest, SearcherOptionsAreDefaultsUntilSet) {
  SearcherOptions options;
  EXPECT_FALSE(options.Get<ToyOptions>().split_inputs);
  options.Mutable<ToyOptions>().split_inputs = true;
  SearcherOptions copy = options;
  options.Mutable<ToyOptions>().split_inputs = false;
  EXPECT_TRUE(copy.Get<ToyOptions>().split_inputs);  // a value: copies do not share
  EXPECT_FALSE(options.Get<ToyOptions>().split_inputs);
}

}  // namespace
}  // namespace ofl
