// The cost model under mixed precision (graph.config.mixed_precision("bf16"):
// matmul's operands are cast to bfloat16 and its output stays float32): the
// matmul is priced at the cluster's bfloat16 FLOP/s (float32's when the
// cluster gives none for bfloat16), and its operands' boxing moves 2-byte
// elements. Hand-worked on TwoLevelCluster (float32 1 TFLOP/s, bfloat16
// 2 TFLOP/s, 4 devices at 100 GB/s), a [1024, 512] x [512, 256] matmul.
#include <gtest/gtest.h>

#include "graph/cost_model.h"
#include "graph/cost_model_internal.h"
#include "model_makers.h"

namespace ofl {
namespace {

using testing::Mesh;
using testing::TwoLevelCluster;

constexpr double kFullFlops = 2.0 * 1024 * 512 * 256;

OpGraph MatmulGraph(bool bf16) {
  OpGraph g;
  CHECK(g.AddInput("x", {Shape{1024, 512}, DataType::kFloat32}).ok());
  CHECK(g.AddVariable("w", TensorDesc{Shape{512, 256}, DataType::kFloat32}, false).ok());
  std::string a = "x", b = "w";
  if (bf16) {
    const AttrMap to_bf16{{"dtype", std::string("bfloat16")}};
    a = g.AddOp("cast", {"x"}, to_bf16, "cast_x").value()[0];
    b = g.AddOp("cast", {"w"}, to_bf16, "cast_w").value()[0];
  }
  CHECK(g.AddOp("matmul", {a, b}, {}, "mm").ok());
  return g;
}

int CandidateOf(const CostNodeInfo& node, const std::string& signature) {
  const NdSbpSignature want = NdSbpSignature::Parse(signature).value();
  for (size_t c = 0; c < node.signatures.size(); ++c) {
    if (node.signatures[c] == want) return static_cast<int>(c);
  }
  ADD_FAILURE() << node.name << " has no candidate " << signature;
  return 0;
}

double ComputeSeconds(const CostModel& m, const std::string& op, const std::string& signature) {
  const int n = m.NodeOf(op);
  return m.graph().node(n).candidates[CandidateOf(m.nodes()[n], signature)].compute_seconds;
}

// The busiest rank's bytes when mm's input 1 arrives S(0) and mm wants it B
// (an all-gather: 3/4 of the tensor), and the dtype the edge is costed in.
std::pair<int64_t, DataType> WeightGatherBytes(const CostModel& m) {
  const int mm = m.NodeOf("mm");
  for (size_t e = 0; e < m.edges().size(); ++e) {
    const CostEdgeInfo& edge = m.edges()[e];
    if (edge.consumer != mm || edge.input_index != 1) continue;
    const int want = CandidateOf(m.nodes()[mm], "(S(0)), (B) -> (S(0))");
    const NdSbp split = NdSbp::Parse("(S(0))").value();
    for (size_t c = 0; c < m.graph().node(edge.producer).candidates.size(); ++c) {
      if (m.ProducedSbp(static_cast<int>(e), static_cast<int>(c)) != split) continue;
      auto plan = m.EdgeBoxing(static_cast<int>(e), static_cast<int>(c), want).value();
      return {plan->MaxBytesSent(), edge.desc.dtype};
    }
  }
  ADD_FAILURE() << "no S(0) -> B edge into mm's input 1";
  return {0, DataType::kFloat32};
}

TEST(CostModelMixedPrecision, Bf16MatmulIsPricedAtTheBf16RateAndMovesTwoByteElements) {
  const auto f32 =
      BuildCostModel(MatmulGraph(false), Strategy(Mesh({4})), TwoLevelCluster()).value();
  const auto bf16 =
      BuildCostModel(MatmulGraph(true), Strategy(Mesh({4})), TwoLevelCluster()).value();
  const std::string dp = "(S(0)), (B) -> (S(0))";
  EXPECT_DOUBLE_EQ(ComputeSeconds(*f32, "mm", dp), kFullFlops / 4 / 1e12);
  EXPECT_DOUBLE_EQ(ComputeSeconds(*bf16, "mm", dp), kFullFlops / 4 / 2e12);
  // The casts are priced too: one conversion per element, at the bf16 rate.
  EXPECT_DOUBLE_EQ(ComputeSeconds(*bf16, "cast_x", "(S(0)) -> (S(0))"), 1024.0 * 512 / 4 / 2e12);
  EXPECT_DOUBLE_EQ(ComputeSeconds(*bf16, "cast_w", "(B) -> (B)"), 512.0 * 256 / 2e12);
  const auto [f32_bytes, f32_dtype] = WeightGatherBytes(*f32);
  const auto [bf16_bytes, bf16_dtype] = WeightGatherBytes(*bf16);
  EXPECT_EQ(f32_dtype, DataType::kFloat32);
  EXPECT_EQ(bf16_dtype, DataType::kBFloat16);
  EXPECT_EQ(f32_bytes, 512 * 256 * 4 * 3 / 4);
  EXPECT_EQ(bf16_bytes, 512 * 256 * 2 * 3 / 4);
}

TEST(CostModelMixedPrecision, AClusterWithoutABf16RateUsesTheFloat32One) {
  const Cluster f32_only = Cluster::Parse(
                               "name: 'f32_only'\n"
                               "levels { name: 'fast' size: 4 bandwidth_gbps: 100 latency_us: 1 }\n"
                               "device { name: 'dev' flops { key: 'float32' value: 1e12 } "
                               "memory_bytes: 1099511627776 }\n",
                               "f32_only.pbtxt")
                               .value();
  const auto m = BuildCostModel(MatmulGraph(true), Strategy(Mesh({4})), f32_only).value();
  EXPECT_DOUBLE_EQ(ComputeSeconds(*m, "mm", "(S(0)), (B) -> (S(0))"), kFullFlops / 4 / 1e12);
}

}  // namespace
}  // namespace ofl
