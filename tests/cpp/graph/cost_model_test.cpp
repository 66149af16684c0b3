// Cost model (graph/cost_model.h): every boxing kind's seconds worked out by
// hand from the ring formulas of DESIGN.md section 5 and the two-level test
// cluster (fast: 100 GB/s, 1 us per step, groups of 4; slow: 10 GB/s,
// 10 us), on a 1-D and a 2-D mesh, uneven sizes included; compute seconds
// and memory of a matmul under DP and MP signatures; micro-batch counting;
// shared matrices across identical layers; the infeasible-memory error.
#include "graph/cost_model.h"

#include <gtest/gtest.h>

#include "graph/cost_model_buckets.h"
#include "graph/cost_model_internal.h"
#include "model_makers.h"

namespace ofl {
namespace {

using testing::Mesh;
using testing::TwoLevelCluster;

constexpr double kFastBw = 100e9, kFastLat = 1e-6, kSlowBw = 10e9, kSlowLat = 10e-6;

// Seconds the model charges for one conversion (one execution).
double Seconds(const Shape& shape, const Placement& from_p, const std::string& from,
               const Placement& to_p, const std::string& to) {
  static const Cluster cluster = TwoLevelCluster();
  TensorDesc desc{shape, DataType::kFloat32};
  BoxingPlan plan =
      PlanBoxing(desc, from_p, NdSbp::Parse(from).value(), to_p, NdSbp::Parse(to).value()).value();
  return internal::BoxingPlanSeconds(cluster, plan).value();
}

double Seconds(const Shape& shape, const Placement& p, const std::string& from,
               const std::string& to) {
  return Seconds(shape, p, from, p, to);
}

void ExpectNear(double actual, double expected) {
  EXPECT_NEAR(actual, expected, 1e-12 + 1e-9 * expected);
}

TEST(CostModelBoxingTest, OneDimensionalMeshEveryKind) {
  const Placement p = Mesh({4});  // groups of 4 run on the fast level
  const Shape s{1024, 256};       // T = 1024 * 256 * 4 = 1 MiB
  const double t = 1048576.0;
  // P -> B: all-reduce, 2(p-1)/p T = 1.5 T, 2(p-1) = 6 steps.
  ExpectNear(Seconds(s, p, "(P)", "(B)"), 6 * kFastLat + 1.5 * t / kFastBw);
  // P -> S(0): reduce-scatter, (p-1)/p T, p-1 = 3 steps.
  ExpectNear(Seconds(s, p, "(P)", "(S(0))"), 3 * kFastLat + 0.75 * t / kFastBw);
  // S(0) -> B: all-gather, (p-1) * T/p, 3 steps.
  ExpectNear(Seconds(s, p, "(S(0))", "(B)"), 3 * kFastLat + 0.75 * t / kFastBw);
  // S(0) -> S(1): all-to-all, (p-1)/p^2 T = 3/16 T, 3 steps.
  ExpectNear(Seconds(s, p, "(S(0))", "(S(1))"), 3 * kFastLat + 3.0 / 16.0 * t / kFastBw);
  // B -> S, B -> P, S -> P: local; same -> same: nothing.
  EXPECT_EQ(Seconds(s, p, "(B)", "(S(1))"), 0.0);
  EXPECT_EQ(Seconds(s, p, "(B)", "(P)"), 0.0);
  EXPECT_EQ(Seconds(s, p, "(S(0))", "(P)"), 0.0);
  EXPECT_EQ(Seconds(s, p, "(S(1))", "(S(1))"), 0.0);
}

TEST(CostModelBoxingTest, OneDimensionalUnevenChargesTheBusiestRank) {
  const Placement p = Mesh({4});
  // [10, 256] rows split 3, 3, 2, 2: rank 0 sends its 3 rows to 3 peers.
  ExpectNear(Seconds({10, 256}, p, "(S(0))", "(B)"), 3 * kFastLat + 3 * 3 * 256 * 4 / kFastBw);
  // [10, 256] S(1) -> S(0): every rank holds [10, 64]; ranks 2 and 3 keep
  // only [2, 64] and send 8 * 64 elements (rank 0 keeps 3 rows, sends 7 * 64).
  ExpectNear(Seconds({10, 256}, p, "(S(1))", "(S(0))"), 3 * kFastLat + 8 * 64 * 4 / kFastBw);
  // P -> S(0) of [10, 256]: rank 2 keeps 2 rows, sends 8 * 256 elements (the most).
  ExpectNear(Seconds({10, 256}, p, "(P)", "(S(0))"), 3 * kFastLat + 8 * 256 * 4 / kFastBw);
}

TEST(CostModelBoxingTest, TwoDimensionalMeshTwoLevels) {
  const Placement p = Mesh({2, 4});  // axis 0: groups of 2 across nodes (slow); axis 1: fast
  const Shape s{1024, 256};
  const double t = 1048576.0;
  // (P, B) -> (B, B): all-reduce of T on groups of 2, slow: 2(p-1) = 2 steps, T bytes.
  ExpectNear(Seconds(s, p, "(P, B)", "(B, B)"), 2 * kSlowLat + t / kSlowBw);
  // (B, P) -> (B, B): all-reduce on groups of 4, fast.
  ExpectNear(Seconds(s, p, "(B, P)", "(B, B)"), 6 * kFastLat + 1.5 * t / kFastBw);
  // (P, B) -> (S(0), B): reduce-scatter on axis 0, half of T.
  ExpectNear(Seconds(s, p, "(P, B)", "(S(0), B)"), kSlowLat + 0.5 * t / kSlowBw);
  // (B, S(1)) -> (B, S(0)): all-to-all on axis 1: 3/16 T, fast.
  ExpectNear(Seconds(s, p, "(B, S(1))", "(B, S(0))"), 3 * kFastLat + 3.0 / 16 * t / kFastBw);
  // (S(0), B) -> (B, B): all-gather on axis 0 of T/2.
  ExpectNear(Seconds(s, p, "(S(0), B)", "(B, B)"), kSlowLat + 0.5 * t / kSlowBw);
  // Local steps.
  EXPECT_EQ(Seconds(s, p, "(B, B)", "(S(0), B)"), 0.0);
  EXPECT_EQ(Seconds(s, p, "(B, B)", "(B, P)"), 0.0);
  EXPECT_EQ(Seconds(s, p, "(S(0), B)", "(P, B)"), 0.0);
  EXPECT_EQ(Seconds(s, p, "(S(0), S(1))", "(S(0), S(1))"), 0.0);
}

TEST(CostModelBoxingTest, ChangeOnBothAxesIsPlannedAsAWhole) {
  const Placement p = Mesh({2, 4});
  // (S(0), S(1)) -> (B, B). Either order sends 917504 bytes from the
  // busiest rank; the planner keeps the first order (axis 0 first):
  //   all-gather on axis 0 of the [512, 64] slice: 1 * 131072 bytes, slow, 1 step;
  //   all-gather on axis 1 of the [1024, 64] slice: 3 * 262144 bytes, fast, 3 steps.
  const double expected = kSlowLat + 131072 / kSlowBw + 3 * kFastLat + 786432 / kFastBw;
  ExpectNear(Seconds({1024, 256}, p, "(S(0), S(1))", "(B, B)"), expected);
  // Costing each axis alone from the start would charge the axis-1 gather
  // on the [512, 64] slice (393216 bytes): a different, wrong answer.
  EXPECT_GT(std::abs(expected - (kSlowLat + 131072 / kSlowBw + 3 * kFastLat + 393216 / kFastBw)),
            1e-7);
}

TEST(CostModelBoxingTest, TwoDimensionalUneven) {
  const Placement p = Mesh({2, 4});
  // [5, 256] (S(0), B) -> (B, B): rows 3 and 2 over axis 0; rank 0 sends 3 rows.
  ExpectNear(Seconds({5, 256}, p, "(S(0), B)", "(B, B)"), kSlowLat + 3 * 256 * 4 / kSlowBw);
  // [5, 256] (B, S(0)) -> (B, B) on axis 1: rows 2, 1, 1, 1; rank 0 sends 2 rows to 3 peers.
  ExpectNear(Seconds({5, 256}, p, "(B, S(0))", "(B, B)"), 3 * kFastLat + 3 * 2 * 256 * 4 / kFastBw);
}

TEST(CostModelBoxingTest, AcrossPlacementsUsesTheSlowestLevelSpanned) {
  // Ranks 0-3 to ranks 4-7 span two groups of 4: slow. B -> B: each of the
  // four senders sends T to one receiver: one send/recv step.
  const double t = 1048576.0;
  ExpectNear(Seconds({1024, 256}, Mesh({4}), "(B)", Mesh({4}, 4), "(B)"), kSlowLat + t / kSlowBw);
  // Ranks 0-1 to ranks 2-3 stay within a group of 4: fast. S(0) -> S(0): T/2 each.
  ExpectNear(Seconds({1024, 256}, Mesh({2}), "(S(0))", Mesh({2}, 2), "(S(0))"),
             kFastLat + 0.5 * t / kFastBw);
}

// x [m, 512] @ w [512, 256]: FLOPs 2 * m * 256 * 512 at 1 TFLOP/s.
OpGraph MatmulGraph(int64_t m) {
  OpGraph g;
  CHECK(g.AddInput("x", {Shape{m, 512}, DataType::kFloat32}).ok());
  CHECK(g.AddVariable("w", TensorDesc{Shape{512, 256}, DataType::kFloat32}, false).ok());
  CHECK(g.AddOp("matmul", {"x", "w"}, {}, "mm").ok());
  return g;
}

int CandidateOf(const CostNodeInfo& node, const std::string& signature) {
  NdSbpSignature want = NdSbpSignature::Parse(signature).value();
  for (size_t c = 0; c < node.signatures.size(); ++c) {
    if (node.signatures[c] == want) return static_cast<int>(c);
  }
  ADD_FAILURE() << node.name << " has no candidate " << signature;
  return 0;
}

TEST(CostModelComputeTest, MatmulUnderDataAndModelParallelSignatures) {
  const OpGraph g = MatmulGraph(1024);
  auto model = BuildCostModel(g, Strategy(Mesh({4})), TwoLevelCluster()).value();
  const int mm = model->NodeOf("mm");
  const CostNode& node = model->graph().node(mm);
  const CostNodeInfo& info = model->nodes()[mm];
  const double full = 2.0 * 1024 * 256 * 512 / 1e12;
  auto compute = [&](const std::string& sig) {
    return node.candidates[CandidateOf(info, sig)].compute_seconds;
  };
  ExpectNear(compute("(S(0)), (B) -> (S(0))"), full / 4);  // data parallel
  ExpectNear(compute("(B), (S(1)) -> (S(1))"), full / 4);  // model parallel (columns)
  ExpectNear(compute("(S(1)), (S(0)) -> (P)"), full / 4);  // k split
  ExpectNear(compute("(B), (B) -> (B)"), full);            // redundant
  // Memory: the output slice kept for backward, [256, 256] or [1024, 64] or
  // the full [1024, 256] for P and B.
  EXPECT_EQ(node.candidates[CandidateOf(info, "(S(0)), (B) -> (S(0))")].memory_bytes, 262144);
  EXPECT_EQ(node.candidates[CandidateOf(info, "(B), (S(1)) -> (S(1))")].memory_bytes, 262144);
  EXPECT_EQ(node.candidates[CandidateOf(info, "(S(1)), (S(0)) -> (P)")].memory_bytes, 1048576);
}

TEST(CostModelComputeTest, UnevenAndTwoDimensionalShares) {
  const OpGraph g = MatmulGraph(10);
  auto model = BuildCostModel(g, Strategy(Mesh({4})), TwoLevelCluster()).value();
  const int mm = model->NodeOf("mm");
  const double full = 2.0 * 10 * 256 * 512 / 1e12;
  // 10 rows over 4: the busiest rank has 3 of 10.
  ExpectNear(model->graph()
                 .node(mm)
                 .candidates[CandidateOf(model->nodes()[mm], "(S(0)), (B) -> (S(0))")]
                 .compute_seconds,
             full * 3 / 10);
  const OpGraph g2 = MatmulGraph(1024);
  auto m2 = BuildCostModel(g2, Strategy(Mesh({2, 4})), TwoLevelCluster()).value();
  const int mm2 = m2->NodeOf("mm");
  const double full2 = 2.0 * 1024 * 256 * 512 / 1e12;
  auto compute = [&](const std::string& sig) {
    return m2->graph().node(mm2).candidates[CandidateOf(m2->nodes()[mm2], sig)].compute_seconds;
  };
  ExpectNear(compute("(S(0), S(0)), (B, B) -> (S(0), S(0))"), full2 / 8);
  ExpectNear(compute("(S(0), B), (B, S(1)) -> (S(0), S(1))"), full2 / 8);
  ExpectNear(compute("(S(0), B), (B, B) -> (S(0), B)"), full2 / 2);  // axis 1 redundant
  // compute_dtype bfloat16: 2 TFLOP/s, and the output bytes halve.
  CostOptions bf16;
  bf16.compute_dtype = DataType::kBFloat16;
  auto m3 = BuildCostModel(g2, Strategy(Mesh({4})), TwoLevelCluster(), bf16).value();
  const int c = CandidateOf(m3->nodes()[m3->NodeOf("mm")], "(S(0)), (B) -> (S(0))");
  ExpectNear(m3->graph().node(m3->NodeOf("mm")).candidates[c].compute_seconds, full2 / 4 / 2);
  EXPECT_EQ(m3->graph().node(m3->NodeOf("mm")).candidates[c].memory_bytes, 256 * 256 * 2);
}

TEST(CostModelTest, SourcesVariablesAndFoldedUpdates) {
  const OpGraph g = testing::LinearModel(64, 32, 16, "adam");
  auto model = BuildCostModel(g, Strategy(Mesh({4})), TwoLevelCluster()).value();
  // Nodes: x, w (with update/w folded in), then the ops other than the update.
  const int w = model->NodeOf("w");
  ASSERT_GE(w, 0);
  EXPECT_EQ(model->NodeOf("update/w"), w);
  EXPECT_EQ(model->NodeOf("w/m"), -1);
  const CostNodeInfo& info = model->nodes()[w];
  EXPECT_EQ(info.kind, CostNodeKind::kVariable);
  EXPECT_EQ(info.update_op, "update/w");
  ASSERT_EQ(info.states.size(), 3u);  // m, v follow; step (a scalar) is B
  // Candidates: B, S(0), S(1) of w (never P), each with its update signature.
  ASSERT_EQ(info.sbps.size(), 3u);
  // Memory: 4 x 4 bytes per parameter (weight, gradient, two moments).
  for (size_t c = 0; c < info.sbps.size(); ++c) {
    const int64_t elements = info.sbps[c][0].is_split() ? 32 * 16 / 4 : 32 * 16;
    EXPECT_EQ(model->graph().node(w).candidates[c].memory_bytes, 16 * elements);
  }
  const int x = model->NodeOf("x");
  EXPECT_EQ(model->nodes()[x].kind, CostNodeKind::kInput);
  EXPECT_EQ(model->nodes()[x].sbps.size(), 3u);  // B, S(0), S(1)
  // Every choice converts to a valid strategy and back.
  std::vector<int> choice(model->graph().num_nodes(), 0);
  choice[w] = 2;
  Strategy s = model->ToStrategy(choice).value();
  ASSERT_TRUE(s.Validate(g).ok()) << s.Validate(g).message();
  EXPECT_EQ(s.sources().at("w/m"), s.sources().at("w"));
  EXPECT_EQ(model->ChoiceOf(s).value(), choice);
}

TEST(CostModelTest, MicroBatchesCountForwardAndBackwardOnly) {
  const OpGraph g = testing::LinearModel(64, 32, 16);
  const Strategy placements(Mesh({4}));
  auto one = BuildCostModel(g, placements, TwoLevelCluster()).value();
  CostOptions four_options;
  four_options.micro_batches = 4;
  auto four = BuildCostModel(g, placements, TwoLevelCluster(), four_options).value();
  ASSERT_EQ(one->graph().num_nodes(), four->graph().num_nodes());
  ASSERT_EQ(one->graph().num_edges(), four->graph().num_edges());
  int update_edges = 0;
  for (int u = 0; u < one->graph().num_nodes(); ++u) {
    const bool update = !one->nodes()[u].update_op.empty();
    for (int c = 0; c < one->graph().num_candidates(u); ++c) {
      ExpectNear(four->graph().node(u).candidates[c].compute_seconds,
                 (update ? 1 : 4) * one->graph().node(u).candidates[c].compute_seconds);
      EXPECT_EQ(four->graph().node(u).candidates[c].memory_bytes,
                one->graph().node(u).candidates[c].memory_bytes);
    }
  }
  for (int e = 0; e < one->graph().num_edges(); ++e) {
    const bool into_update = !one->nodes()[one->edges()[e].consumer].update_op.empty();
    update_edges += into_update ? 1 : 0;
    const EdgeMatrix& a = *one->graph().edge(e).matrix;
    const EdgeMatrix& b = *four->graph().edge(e).matrix;
    for (int r = 0; r < a.rows(); ++r) {
      for (int c = 0; c < a.cols(); ++c) ExpectNear(b.at(r, c), (into_update ? 1 : 4) * a.at(r, c));
    }
  }
  EXPECT_EQ(update_edges, 1);  // the gradient of w, once per step
}

TEST(CostModelTest, EdgeEntriesAreTheBoxingSecondsAndIdenticalLayersShareMatrices) {
  const OpGraph g = testing::TransformerModel(3, 2, 16, 32, 4);
  auto model = BuildCostModel(g, Strategy(Mesh({2, 2})), TwoLevelCluster()).value();
  // Spot-check entries against a fresh PlanBoxing, times the multiplier.
  for (int e = 0; e < model->graph().num_edges(); e += 97) {
    if (IsGradientEdge(*model, e)) continue;  // bucketed (cost_model_buckets_test)
    const EdgeMatrix& m = *model->graph().edge(e).matrix;
    for (int r = 0; r < m.rows(); r += 3) {
      for (int c = 0; c < m.cols(); c += 5) {
        const BoxingPlan& plan = *model->EdgeBoxing(e, r, c).value();
        ExpectNear(m.at(r, c), model->edges()[e].multiplier * model->BoxingSeconds(plan).value());
      }
    }
  }
  // Layer 1's and layer 2's qkv matmul input edges share one matrix.
  auto edge_into = [&](const std::string& op, int input) {
    for (int e = 0; e < model->graph().num_edges(); ++e) {
      if (model->edges()[e].consumer == model->NodeOf(op) && model->edges()[e].input_index == input)
        return e;
    }
    return -1;
  };
  const int e1 = edge_into("h.1.attn.qkv/matmul", 0), e2 = edge_into("h.2.attn.qkv/matmul", 0);
  ASSERT_GE(e1, 0);
  ASSERT_GE(e2, 0);
  EXPECT_EQ(model->graph().edge(e1).matrix.get(), model->graph().edge(e2).matrix.get());
  EXPECT_LT(model->stats().distinct_matrices, model->graph().num_edges() / 2);
}

TEST(CostModelTest, InfeasibleMemoryGivesTheSmallestNeedInGiB) {
  // w [8192, 8192] float32 with SGD: 16 bytes per parameter = 1 GiB in all;
  // split over 4 devices at best 0.25 GiB plus x's and the activations' share.
  const OpGraph g = testing::LinearModel(4, 8192, 8192);
  CostOptions options;
  options.memory_limit_bytes = int64_t{1} << 27;  // 0.125 GiB
  auto model = BuildCostModel(g, Strategy(Mesh({4})), TwoLevelCluster(), options);
  ASSERT_FALSE(model.ok());
  const std::string msg = model.status().message();  // status() is a temporary
  EXPECT_NE(msg.find("smallest per-device memory any strategy needs is 0.25"), std::string::npos)
      << msg;
  EXPECT_NE(msg.find("limit of 0.125 GiB"), std::string::npos) << msg;
  CostOptions bad;
  bad.micro_batches = 0;
  auto m2 = BuildCostModel(g, Strategy(Mesh({4})), TwoLevelCluster(), bad);
  ASSERT_FALSE(m2.ok());
  EXPECT_NE(m2.status().message().find("micro_batches=0"), std::string::npos);
}

TEST(CostModelTest, LazyVariablesPlanButHaveNoValue) {
  const OpGraph g = testing::LinearModel(4, 8, 8);
  EXPECT_TRUE(g.variable("w").lazy);
  Maybe<Tensor> init = g.InitialValue("w");
  ASSERT_FALSE(init.ok());
  EXPECT_NE(init.status().message().find("'w'"), std::string::npos);
  EXPECT_TRUE(g.variable("w/momentum").lazy);  // state follows its parameter
}

}  // namespace
}  // namespace ofl
