// Strategy report and diff on two linears (x [4, 2] @ w1 [2, 2] @ w2 [2, 2],
// forward only) against values worked out by hand, on a 1-D mesh [2] and a
// 2-D mesh [2, 2] with two link levels. The cluster: 1 GFLOP/s float32,
// latency 0 (so a collective costs bytes / bandwidth), 1 GB/s on [2] and
// 10 GB/s inside a pair, 1 GB/s across pairs on [2, 2]. Feeding the input
// costs its slice's bytes over the innermost level's bandwidth
// (graph/cost_model.h).
#include "graph/strategy_report.h"

#include <gtest/gtest.h>

#include "graph/cost_model.h"
#include "graph/strategy_diff.h"
#include "model_makers.h"
#include "oneflow_lite/core/json.h"

namespace ofl {
namespace {

OpGraph TwoLinears() {
  OpGraph g;
  CHECK(g.AddInput("x", {{4, 2}, DataType::kFloat32}).ok());
  CHECK(g.AddVariable("w1", Tensor::Full({2, 2}, DataType::kFloat32, 1.0), true).ok());
  CHECK(g.AddVariable("w2", Tensor::Full({2, 2}, DataType::kFloat32, 1.0), true).ok());
  CHECK(g.AddOp("matmul", {"x", "w1"}, {}, "mm1").ok());
  CHECK(g.AddOp("matmul", {"mm1/out_0", "w2"}, {}, "mm2").ok());
  return g;
}

Cluster OneLevel() {
  return Cluster::Parse(R"(name: "test1d"
levels { name: "link" size: 0 bandwidth_gbps: 1.0 latency_us: 0 }
device { name: "d" flops { key: "float32" value: 1e9 } memory_bytes: 1073741824 })",
                        "test1d")
      .value();
}

Cluster TwoLevels() {
  return Cluster::Parse(R"(name: "test2d"
levels { name: "pair" size: 2 bandwidth_gbps: 10.0 latency_us: 0 }
levels { name: "net" size: 0 bandwidth_gbps: 1.0 latency_us: 0 }
device { name: "d" flops { key: "float32" value: 1e9 } memory_bytes: 1073741824 })",
                        "test2d")
      .value();
}

Strategy Manual(const Placement& p, const std::map<std::string, std::string>& sources,
                const std::map<std::string, std::string>& signatures) {
  Strategy s(p);
  for (const auto& [t, sbp] : sources) s.SetSourceSbp(t, NdSbp::Parse(sbp).value());
  for (const auto& [op, sig] : signatures) s.SetSignature(op, NdSbpSignature::Parse(sig).value());
  return s;
}

const NodeReport& Node(const StrategyReport& r, const std::string& name) {
  for (const NodeReport& n : r.nodes) {
    if (n.name == name) return n;
  }
  ADD_FAILURE() << "no node " << name;
  return r.nodes.front();
}

// mm1 data parallel, mm2 column parallel: x S(0), w1 B -> h S(0); h must be
// gathered to B for mm2 (B, S(1) -> S(1)).
Strategy ColumnSecond(const Placement& p) {
  return Manual(p, {{"x", "S(0)"}, {"w1", "B"}, {"w2", "S(1)"}},
                {{"mm1", "S(0), B -> S(0)"}, {"mm2", "B, S(1) -> S(1)"}});
}

TEST(StrategyReport, TwoLinearsOnTwoRanksByHand) {
  OpGraph g = TwoLinears();
  Placement p = Placement::Create(DeviceType::kCPU, {0, 1}).value();
  auto model = BuildCostModel(g, Strategy(p), OneLevel()).value();
  std::vector<int> choice = model->ChoiceOf(ColumnSecond(p)).value();
  Solution s = model->graph().Evaluate(choice).value();
  StrategyReport r = ReportStrategy(g, *model, s).value();

  // Each matmul: 2*4*2*2 = 32 FLOPs, half of them on the busiest rank:
  // 16 / 1e9 = 16 ns. The edge mm1/out_0: all-gather of 4x2 floats = 32
  // bytes, each rank sends (2-1)/2 * 32 = 16 bytes: 16 / 1e9 = 16 ns.
  // Feeding x as S(0): a [2, 2] slice, 16 bytes at 1 GB/s: 16 ns.
  EXPECT_NEAR(Node(r, "mm1").compute_seconds, 16e-9, 1e-15);
  EXPECT_NEAR(Node(r, "mm2").compute_seconds, 16e-9, 1e-15);
  EXPECT_NEAR(Node(r, "mm2").communication_seconds, 16e-9, 1e-15);
  EXPECT_NEAR(Node(r, "mm1").communication_seconds, 0, 1e-15);
  EXPECT_NEAR(Node(r, "x").compute_seconds, 16e-9, 1e-15);
  EXPECT_NEAR(r.total_seconds, 64e-9, 1e-15);
  EXPECT_EQ(Node(r, "mm2").signature, "(B), (S(1)) -> (S(1))");
  EXPECT_EQ(Node(r, "w2").signature, "(S(1))");
  // Costliest first: mm2 (32 ns) leads.
  EXPECT_EQ(r.nodes.front().name, "mm2");
  ASSERT_EQ(r.edges.size(), 1u);
  const EdgeReport& e = r.edges[0];
  EXPECT_EQ(e.tensor, "mm1/out_0");
  EXPECT_EQ(e.from, "(S(0))");
  EXPECT_EQ(e.to, "(B)");
  ASSERT_EQ(e.steps.size(), 1u);
  EXPECT_EQ(e.steps[0].kind, "ALL_GATHER");
  EXPECT_EQ(e.steps[0].max_bytes, 16);
  EXPECT_EQ(e.max_bytes, 16);
  EXPECT_NEAR(e.seconds, 16e-9, 1e-15);
  // Memory: mm1's output slice [2, 2] floats = 16 bytes, mm2's [4, 1] = 16.
  EXPECT_EQ(Node(r, "mm1").memory_bytes, 16);
  EXPECT_EQ(Node(r, "mm2").memory_bytes, 16);

  // SPAA bound, m=4, k=2, n=2, P=2: sorted (4, 2, 2), P <= 4/2: the 1d case,
  // (8 + 8)/2 + 2*2 = 12 accessed, (8 + 8 + 4)/2 = 10 held: 2 words = 8 bytes.
  // mm1 moves nothing (w1 is replicated, which the bound does not assume);
  // mm2 moves the 16 gathered bytes.
  ASSERT_TRUE(Node(r, "mm2").matmul.has_value());
  EXPECT_EQ(Node(r, "mm2").matmul->m, 4);
  EXPECT_EQ(Node(r, "mm2").matmul->k, 2);
  EXPECT_EQ(Node(r, "mm2").matmul->n, 2);
  EXPECT_EQ(Node(r, "mm2").matmul->processors, 2);
  EXPECT_DOUBLE_EQ(Node(r, "mm2").matmul->lower_bound_bytes, 8);
  EXPECT_EQ(Node(r, "mm2").matmul->bound_case, "1d");
  EXPECT_DOUBLE_EQ(Node(r, "mm2").matmul->bytes, 16);
  EXPECT_DOUBLE_EQ(Node(r, "mm1").matmul->bytes, 0);

  const std::string text = r.ToText();
  EXPECT_NE(text.find("predicted step 0.064 us = compute 0.048 us + communication 0.016 us"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("ALL_GATHER@axis0"), std::string::npos) << text;
  EXPECT_NE(text.find("SPAA bound"), std::string::npos) << text;
  const std::string json = r.ToJson();
  EXPECT_NE(json.find("\"predicted_step_s\": " + JsonNumber(r.total_seconds)), std::string::npos)
      << json;
  EXPECT_NE(json.find("\"lower_bound_bytes\": 8"), std::string::npos) << json;
}

TEST(StrategyReport, TwoLinearsOnATwoLevelMeshByHand) {
  OpGraph g = TwoLinears();
  Placement p = Placement::Create(DeviceType::kCPU, {0, 1, 2, 3}, Shape{2, 2}).value();
  auto model = BuildCostModel(g, Strategy(p), TwoLevels()).value();
  // mm1: x (S(0), B), w1 (B, S(1)) -> h (S(0), S(1)); mm2 wants h (S(0), B).
  Strategy s = Manual(
      p, {{"x", "(S(0), B)"}, {"w1", "(B, S(1))"}, {"w2", "(B, B)"}},
      {{"mm1", "(S(0), B), (B, S(1)) -> (S(0), S(1))"}, {"mm2", "(S(0), B), (B, B) -> (S(0), B)"}});
  Solution sol = model->graph().Evaluate(model->ChoiceOf(s).value()).value();
  StrategyReport r = ReportStrategy(g, *model, sol).value();
  // mm1 does a quarter of 32 FLOPs: 8 ns; mm2 half: 16 ns. The edge: an
  // all-gather on axis 1 (pairs, 10 GB/s) inside each pair's [2, 2] rows
  // (16 bytes): each rank sends 8 bytes, 0.8 ns. Feeding x as (S(0), B):
  // a [2, 2] slice, 16 bytes at the pair's 10 GB/s: 1.6 ns, + 0.8 ns to
  // all-gather it on axis 1 from the (S(0), S(0)) it arrives in (8 bytes).
  EXPECT_NEAR(Node(r, "mm1").compute_seconds, 8e-9, 1e-15);
  EXPECT_NEAR(Node(r, "mm2").compute_seconds, 16e-9, 1e-15);
  ASSERT_EQ(r.edges.size(), 1u);
  ASSERT_EQ(r.edges[0].steps.size(), 1u);
  EXPECT_EQ(r.edges[0].steps[0].kind, "ALL_GATHER");
  EXPECT_EQ(r.edges[0].steps[0].hierarchy_axis, 1);
  EXPECT_EQ(r.edges[0].max_bytes, 8);
  EXPECT_NEAR(r.edges[0].seconds, 0.8e-9, 1e-15);
  EXPECT_NEAR(Node(r, "x").compute_seconds, 2.4e-9, 1e-15);
  EXPECT_NEAR(r.total_seconds, 27.2e-9, 1e-15);
  // The SPAA bound on 4 ranks: (4, 2, 2), P = 4 > 4/2 = 2 and
  // = 4*2/2^2 = 2 < 4: the 3d case, 3*(16/4)^(2/3) = 3*4^(2/3) = 7.5595 accessed,
  // minus 20/4 = 5 held: 2.5595 words = 10.238 bytes.
  EXPECT_EQ(Node(r, "mm1").matmul->bound_case, "3d");
  EXPECT_NEAR(Node(r, "mm1").matmul->lower_bound_bytes, 4 * (3 * 2.5198420997897464 - 5), 1e-9);
}

// The undo copy of transactional steps: Adam's w [4, 3], m and v (float32)
// and step (an int64 scalar, always B) of TinyTrainGraph on two ranks: with
// w B, 3 x 48 + 8 = 152 bytes per device; with w S(0), rows 2 of 4:
// 3 x 24 + 8 = 80. A graph without updates has none.
TEST(StrategyReport, UndoCopyOfUpdatedVariablesByHand) {
  OptimizerConf adam;
  adam.kind = "adam";
  OpGraph g = testing::TinyTrainGraph(adam);
  Placement p = Placement::Create(DeviceType::kCPU, {0, 1}).value();
  auto model = BuildCostModel(g, Strategy(p), OneLevel()).value();
  const int w = model->NodeOf("w");
  ASSERT_GE(w, 0);
  std::map<std::string, int64_t> undo;  // by w's parameter NdSbp
  for (int c = 0; c < model->graph().num_candidates(w); ++c) {
    std::vector<int> choice(model->graph().num_nodes(), 0);
    choice[w] = c;
    Solution s = model->graph().Evaluate(choice).value();
    StrategyReport r = ReportStrategy(g, *model, s).value();
    undo[Node(r, "w").signature.substr(0, Node(r, "w").signature.find(','))] = r.undo_bytes;
    EXPECT_NE(r.ToText().find("undo copy of variables (transactional steps): at most "),
              std::string::npos);
  }
  EXPECT_EQ(undo.at("(B)"), 152);
  EXPECT_EQ(undo.at("(S(0))"), 80);

  OpGraph forward = TwoLinears();
  auto forward_model = BuildCostModel(forward, Strategy(p), OneLevel()).value();
  std::vector<int> choice = forward_model->ChoiceOf(ColumnSecond(p)).value();
  StrategyReport r =
      ReportStrategy(forward, *forward_model, forward_model->graph().Evaluate(choice).value())
          .value();
  EXPECT_EQ(r.undo_bytes, 0);
  EXPECT_EQ(r.ToText().find("undo copy"), std::string::npos);
  EXPECT_NE(r.ToJson().find("\"undo_bytes\": 0"), std::string::npos);
}

TEST(StrategyDiff, SaysWhatChangedAndWhatItCosts) {
  OpGraph g = TwoLinears();
  Placement p = Placement::Create(DeviceType::kCPU, {0, 1}).value();
  auto model = BuildCostModel(g, Strategy(p), OneLevel()).value();
  std::vector<int> before = model->ChoiceOf(ColumnSecond(p)).value();
  std::vector<int> after =
      model
          ->ChoiceOf(Manual(p, {{"x", "S(0)"}, {"w1", "B"}, {"w2", "B"}},
                            {{"mm1", "S(0), B -> S(0)"}, {"mm2", "S(0), B -> S(0)"}}))
          .value();
  StrategyDiff d = DiffStrategies(*model, before, after).value();
  // Data parallel everywhere drops the 16 ns all-gather; mm2 still does half
  // the FLOPs; w2 goes from S(1) to B: twice its memory.
  EXPECT_NEAR(d.before_seconds, 64e-9, 1e-15);
  EXPECT_NEAR(d.after_seconds, 48e-9, 1e-15);
  EXPECT_NEAR(d.delta(), -16e-9, 1e-15);
  ASSERT_EQ(d.nodes.size(), 2u);  // w2 and mm2
  ASSERT_EQ(d.edges.size(), 1u);
  EXPECT_EQ(d.edges[0].tensor, "mm1/out_0");
  EXPECT_EQ(d.edges[0].before, "(S(0)) -> (B)");
  EXPECT_EQ(d.edges[0].after, "(S(0)) -> (S(0))");
  EXPECT_NEAR(d.edges[0].delta(), -16e-9, 1e-15);
  double sum = 0;
  for (const NodeChange& c : d.nodes) {
    sum += c.compute_delta;
    if (c.name == "w2") {
      EXPECT_EQ(c.before, "(S(1))");
      EXPECT_EQ(c.after, "(B)");
      // A trainable variable costs 4 x 4 bytes per element (weight, gradient,
      // two Adam moments): [2, 1] = 32 bytes -> [2, 2] = 64 bytes.
      EXPECT_EQ(c.memory_delta, 32);
    }
  }
  for (const EdgeChange& c : d.edges) sum += c.delta();
  EXPECT_NEAR(sum, d.delta(), 1e-15);
  EXPECT_NE(d.ToText().find("0.064 us -> 0.048 us (-0.016 us)"), std::string::npos) << d.ToText();
  // Same choice: nothing changed.
  StrategyDiff none = DiffStrategies(*model, before, before).value();
  EXPECT_TRUE(none.nodes.empty() && none.edges.empty());
  // A wrong length is an error.
  EXPECT_FALSE(DiffStrategies(*model, before, {0}).ok());
}

}  // namespace
}  // namespace ofl
