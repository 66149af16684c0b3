// The typed compile path (api/strategy_io.h, api/compile.h): a Strategy
// survives its protobuf form and a file unchanged, files of the older JSON
// form still load, strategies bind to the session's placement, and Compile
// gives the session the same Plan as building it by hand from the same
// strategy (the oracle: DistributedSession::Create called directly).
#include "oneflow_lite/api/compile.h"

#include <google/protobuf/text_format.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "oneflow_lite/api/strategy_io.h"
#include "tests/cpp/graph/model_makers.h"

namespace ofl {
namespace {

// The Plan as text: map entries in key order (the bytes are not canonical).
std::string PlanText(const proto::Plan& plan) {
  std::string text;
  EXPECT_TRUE(google::protobuf::TextFormat::PrintToString(plan, &text));
  return text;
}

std::string TempPath(const std::string& name) { return ::testing::TempDir() + "/" + name; }

void Write(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
}

// x split by rows on every axis of `p`, the rest deduced.
Strategy RowSplit(const OpGraph& g, const Placement& p) {
  std::string text = "(S(0)";
  for (int64_t i = 1; i < p.hierarchy().ndim(); ++i) text += ", S(0)";
  return DeduceStrategy(g, p, {{"x", NdSbp::Parse(text + ")").value()}}).value();
}

TEST(StrategyIo, ProtoAndFileRoundTripsAreExact) {
  OpGraph g = testing::TinyTrainGraph();
  Placement p = testing::Mesh({2});
  Strategy s = RowSplit(g, p);
  Strategy back = StrategyFromConf(StrategyToConf(s)).value();
  EXPECT_EQ(back.placement(), p);
  EXPECT_EQ(DiffStrategyText(s, back), "");
  EXPECT_EQ(back.sources().at("x").ToString(), "(S(0))");

  proto::PlannedStrategyConf file;
  *file.mutable_strategy() = StrategyToConf(s);
  file.set_searcher("manual");
  file.set_predicted_step_s(0.25);
  const std::string path = TempPath("strategy.json");
  ASSERT_TRUE(SaveStrategyFile(path, file).ok());
  proto::PlannedStrategyConf loaded = LoadStrategyFile(path).value();
  EXPECT_EQ(loaded.SerializeAsString(), file.SerializeAsString());
}

TEST(StrategyIo, TheOlderJsonFormLoadsUnbound) {
  const std::string path = TempPath("legacy.json");
  Write(path, R"json({"kind": "manual", "sources": {"x": "(S(0))", "w": "(B)"},
                  "signatures": {"fc": "(S(0)), (B) -> (S(0))"}, "searcher": "autoddl",
                  "placement": "cpu:[0, 1] hierarchy (2)", "predicted_step_s": 1.5})json");
  proto::PlannedStrategyConf file = LoadStrategyFile(path).value();
  EXPECT_EQ(file.searcher(), "autoddl");
  EXPECT_EQ(file.predicted_step_s(), 1.5);
  Strategy s = StrategyFromConf(file.strategy()).value();
  EXPECT_EQ(s.placement().size(), 0);  // the older form's placement was text: the session's
  EXPECT_EQ(s.signatures().at("fc").ToString(), "(S(0)), (B) -> (S(0))");
  EXPECT_EQ(s.sources().at("w").ToString(), "(B)");
}

TEST(StrategyIo, BadFilesAreNamed) {
  const std::string path = TempPath("bad.json");
  Write(path, R"({"kind": "random", "seed": 3})");
  EXPECT_NE(LoadStrategyFile(path).status().message().find("holds kind 'random'"),
            std::string::npos);
  Write(path, "[1, 2]");
  EXPECT_NE(LoadStrategyFile(path).status().message().find("is not a JSON object"),
            std::string::npos);
  Write(path, R"json({"strategy": {"ops": [{"op": "fc", "signature": "nonsense"}]}})json");
  proto::PlannedStrategyConf file = LoadStrategyFile(path).value();
  EXPECT_EQ(StrategyFromConf(file.strategy()).status().message().rfind("op 'fc': ", 0), 0u);
  EXPECT_NE(LoadStrategyFile(TempPath("no_such.json")).status().message().find("cannot open"),
            std::string::npos);
}

TEST(StrategyIo, BindTakesTheSessionsPlacement) {
  OpGraph g = testing::TinyTrainGraph();
  Strategy unbound = StrategyFromText({{"x", "(S(0))"}}, {}).value();
  Placement p = testing::Mesh({2});
  EXPECT_EQ(BindStrategy(unbound, p).value().placement(), p);
  Strategy on_cpu = RowSplit(g, p);
  Placement other = testing::Mesh({2}, 2);
  EXPECT_EQ(BindStrategy(on_cpu, other).value().placement(), other);
  Strategy staged = on_cpu;
  staged.SetPlacement("fc", other);
  EXPECT_NE(
      BindStrategy(staged, testing::Mesh({2}, 4)).status().message().find("placements of its own"),
      std::string::npos);
}

TEST(Compile, AGivenStrategyLowersAsTheSessionBuiltByHand) {
  OpGraph g = testing::TinyTrainGraph();
  Placement p = testing::Mesh({2, 2});
  Strategy s = RowSplit(g, p);
  DistributedOptions o;
  o.num_threads = 1;
  CompiledGraph c = Compile(g, p, PlanSpec::Given(s), {}, o).value();
  auto by_hand = DistributedSession::Create(g, s, {}, o).value();
  EXPECT_EQ(PlanText(c.session->plan()), PlanText(by_hand->plan()));
  EXPECT_FALSE(c.planned.has_value());
  EXPECT_EQ(DiffStrategyText(c.strategy, s), "");
}

TEST(Compile, ASearchKeepsItsPlannedStrategy) {
  OpGraph g = testing::TinyTrainGraph();
  Placement p = testing::Mesh({2});
  PlanRequest r;
  r.searcher = "autoddl";
  DistributedOptions o;
  o.num_threads = 1;
  CompiledGraph c =
      Compile(g, p, PlanSpec::Search(r, PresetCluster("h100_8gpu").value()), {}, o).value();
  ASSERT_TRUE(c.planned.has_value());
  EXPECT_EQ(DiffStrategyText(c.strategy, c.planned->strategy), "");
  EXPECT_EQ(c.session->strategy().placement(), p);
  PlannedStrategy alone = PlanRequested(g, p, PresetCluster("h100_8gpu").value(), r).value();
  EXPECT_EQ(DiffStrategyText(alone.strategy, c.strategy), "");
}

TEST(Compile, RandomSpecsAreChecked) {
  EXPECT_EQ(PlanSpec::Random(1, 0).status().message(),
            "strategy: random needs stages >= 1 and seed >= 0, got stages=0 seed=1");
  OpGraph g = testing::TinyTrainGraph();
  EXPECT_EQ(StrategyFor(g, testing::Mesh({2}), PlanSpec::Random(1, 3).value()).status().message(),
            "cannot split 2 ranks into 3 equal stages");
}

}  // namespace
}  // namespace ofl
