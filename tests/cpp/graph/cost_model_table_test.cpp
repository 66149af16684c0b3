// The cost model with a calibrated cluster: an op in the compute table is
// charged exactly the table's interpolated seconds (worked out by hand) times
// the contention factor of the devices sharing the host; an op type not in
// the table keeps the FLOP/s price and is listed in the stats and the report.
#include <gtest/gtest.h>

#include <cmath>

#include "graph/cost_model.h"
#include "graph/strategy_report.h"
#include "model_makers.h"

namespace ofl {
namespace {

using testing::Mesh;

// x [1024, 512] @ w [512, 256] -> relu. The matmul's logical FLOPs are
// 2 x 1024 x 256 x 512 = 2^28.
OpGraph MatmulReluGraph() {
  OpGraph g;
  CHECK(g.AddInput("x", {Shape{1024, 512}, DataType::kFloat32}).ok());
  CHECK(g.AddVariable("w", TensorDesc{Shape{512, 256}, DataType::kFloat32}, false).ok());
  std::string y = g.AddOp("matmul", {"x", "w"}, {}, "mm").value()[0];
  CHECK(g.AddOp("relu", {y}, {}, "act").ok());
  return g;
}

// One level of 4 devices, 1 GFLOP/s; with `table`, the matmul measured at
// 2^24 FLOPs in 1e-4 s and 2^28 in 1e-3 s, and 4 devices at once 2x slower.
Cluster Calibrated(bool table) {
  std::string text =
      "name: 'cal' levels { name: 'shm' size: 4 bandwidth_gbps: 10 latency_us: 1 }\n"
      "device { name: 'cpu' flops { key: 'float32' value: 1e9 } memory_bytes: 1000000000 ";
  if (table) {
    text +=
        "compute { op_type: 'matmul' dtype: 'float32' flops: 16777216 seconds: 0.0001 } "
        "compute { op_type: 'matmul' dtype: 'float32' flops: 268435456 seconds: 0.001 } "
        "contention { devices: 4 factor: 2 } ";
  }
  return Cluster::Parse(text + "}\n", "cal.pbtxt").value();
}

int CandidateOf(const CostNodeInfo& node, const std::string& signature) {
  NdSbpSignature want = NdSbpSignature::Parse(signature).value();
  for (size_t c = 0; c < node.signatures.size(); ++c) {
    if (node.signatures[c] == want) return static_cast<int>(c);
  }
  ADD_FAILURE() << node.name << " has no candidate " << signature;
  return 0;
}

double Compute(const CostModel& model, const std::string& op, const std::string& signature) {
  const int n = model.NodeOf(op);
  return model.graph().node(n).candidates[CandidateOf(model.nodes()[n], signature)].compute_seconds;
}

TEST(CostModelTableTest, ChargesTheInterpolatedTableTimesContention) {
  auto model = BuildCostModel(MatmulReluGraph(), Strategy(Mesh({4})), Calibrated(true)).value();
  // Data parallel: the busiest rank does 2^26 FLOPs. The segment's log-log
  // slope is log(10) / log(16), so 2^26 = 2^24 x 4 takes 1e-4 x 10^0.5 s;
  // 4 devices at once: x 2.
  const double quarter = 1e-4 * std::sqrt(10.0) * 2;
  EXPECT_NEAR(Compute(*model, "mm", "(S(0)), (B) -> (S(0))"), quarter, 1e-12 * quarter);
  EXPECT_NEAR(Compute(*model, "mm", "(B), (S(1)) -> (S(1))"), quarter, 1e-12 * quarter);
  // Redundant: all 2^28 FLOPs, the measured point: 1e-3 s x 2.
  EXPECT_NEAR(Compute(*model, "mm", "(B), (B) -> (B)"), 2e-3, 1e-15);
  EXPECT_EQ(model->stats().untabled_op_types, std::vector<std::string>{"relu"});
}

TEST(CostModelTableTest, OpsNotInTheTableKeepTheFlopRateAndAreReported) {
  const OpGraph g = MatmulReluGraph();
  auto plain = BuildCostModel(g, Strategy(Mesh({4})), Calibrated(false)).value();
  auto calibrated = BuildCostModel(g, Strategy(Mesh({4})), Calibrated(true)).value();
  EXPECT_TRUE(plain->stats().untabled_op_types.empty());
  // Without a table: 2^26 FLOPs at 1 GFLOP/s, as before calibration.
  EXPECT_DOUBLE_EQ(Compute(*plain, "mm", "(S(0)), (B) -> (S(0))"), 67108864 / 1e9);
  // relu is priced by FLOP/s in both; the calibrated cluster adds contention x 2.
  const std::string sig = "(S(0)) -> (S(0))";
  EXPECT_GT(Compute(*plain, "act", sig), 0);
  EXPECT_NEAR(Compute(*calibrated, "act", sig), 2 * Compute(*plain, "act", sig), 1e-18);
  // The report says which op types had no measured time.
  std::vector<int> choice(calibrated->graph().num_nodes(), 0);
  Solution solution = calibrated->graph().Evaluate(choice).value();
  auto report = ReportStrategy(g, *calibrated, solution);
  ASSERT_TRUE(report.ok()) << report.status().message();
  EXPECT_NE(report.value().ToText().find("not measured, priced by FLOP/s: relu"), std::string::npos)
      << report.value().ToText();
  EXPECT_NE(report.value().ToJson().find("\"untabled_op_types\": [\"relu\"]"), std::string::npos);
}

}  // namespace
}  // namespace ofl
