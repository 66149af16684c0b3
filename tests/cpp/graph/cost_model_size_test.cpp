// Size arithmetic in the graph and the cost model for absurd models: a
// 2^80-parameter layer is refused where it is declared (its element count
// is more than int64 can hold); a 2^60-parameter layer (2^62 bytes of
// float32, 2^64 bytes at SGD's 16 bytes per parameter) is an
// infeasible-memory error naming it rather than planned as if free; and
// memory sums never wrap. Worked by hand: 2^30 = 1073741824,
// 2^58 params x 16 B = 2^62 B = 2^32 GiB = 4294967296 GiB (printed 4.29497e+09).
#include <gtest/gtest.h>

#include "graph/boxing.h"
#include "graph/cost_model.h"
#include "model_makers.h"

namespace ofl {
namespace {

using testing::Mesh;
using testing::TwoLevelCluster;

constexpr int64_t k2p30 = int64_t{1} << 30;

bool Has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(GraphSizeTest, A2Pow80ParameterLayerIsRefusedWhereItIsDeclared) {
  OpGraph g;
  const Status s = g.AddVariable(
      "w", TensorDesc{Shape{int64_t{1} << 40, int64_t{1} << 40}, DataType::kFloat32}, true);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(),
            "variable 'w': shape (1099511627776, 1099511627776) has 1208925819614629174706176 "
            "elements, more than int64 can hold");
  EXPECT_FALSE(g.HasTensor("w"));  // nothing changed
}

TEST(GraphSizeTest, ReshapeIntoAnOverflowingShapeNamesTheOp) {
  OpGraph g;
  ASSERT_TRUE(g.AddInput("x", {Shape{4}, DataType::kFloat32}).ok());
  AttrMap attrs;
  attrs.Set("shape", std::vector<int64_t>{4, (int64_t{1} << 62) + 1});
  auto out = g.AddOp("reshape", {"x"}, attrs, "r");
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().message(),
            "reshape 'r': shape (4, 4611686018427387905) has 18446744073709551620 elements, more "
            "than int64 can hold");
  // Outputs of other ops are checked after inference: [2^31, 2^29] @ [2^29, 2^31]
  // (2^62 bytes each) makes 2^62 elements, 2^64 bytes of float32.
  const int64_t k2p29 = int64_t{1} << 29, k2p31 = int64_t{1} << 31;
  ASSERT_TRUE(g.AddInput("a", {Shape{k2p31, k2p29}, DataType::kFloat32}).ok());
  ASSERT_TRUE(g.AddInput("b", {Shape{k2p29, k2p31}, DataType::kFloat32}).ok());
  auto mm = g.AddOp("matmul", {"a", "b"}, {}, "mm");
  ASSERT_FALSE(mm.ok());
  EXPECT_EQ(mm.status().message(),
            "matmul 'mm': output out: shape (2147483648, 2147483648) of float32 takes "
            "18446744073709551616 bytes, more than int64 can hold");
  EXPECT_FALSE(g.HasTensor("mm/out_0"));
}

TEST(CostModelSizeTest, ALayerNeedingMoreThanInt64BytesIsInfeasibleNotFree) {
  // One device: w [2^30, 2^30] needs 16 x 2^60 = 2^64 bytes, more than
  // int64 holds (the unchecked cast made it INT64_MIN: "free"). Infeasible
  // even without a memory limit.
  const OpGraph g = testing::LinearModel(1, k2p30, k2p30);
  for (int64_t limit : {int64_t{0}, kNoMemoryLimit}) {
    CostOptions options;
    options.memory_limit_bytes = limit;
    auto model = BuildCostModel(g, Strategy(Mesh({1})), TwoLevelCluster(), options);
    ASSERT_FALSE(model.ok());
    const std::string msg = model.status().message();
    EXPECT_TRUE(Has(msg,
                    "no strategy fits device memory: the smallest per-device memory any "
                    "strategy needs is more than int64 can hold (8 EiB)"))
        << msg;
    EXPECT_TRUE(Has(msg,
                    "largest: variable 'w' of shape (1073741824, 1073741824) float32 needs "
                    "more than int64 can hold"))
        << msg;
  }
}

TEST(CostModelSizeTest, TheInfeasibleErrorNamesTheLargestNeedInGiB) {
  // Four devices: w split in four needs 2^58 x 16 B = 4294967296 GiB.
  const OpGraph g = testing::LinearModel(1, k2p30, k2p30);
  auto model = BuildCostModel(g, Strategy(Mesh({4})), TwoLevelCluster(), {});
  ASSERT_FALSE(model.ok());
  const std::string msg = model.status().message();
  EXPECT_TRUE(Has(msg, "above the limit of 1024 GiB")) << msg;
  EXPECT_TRUE(Has(msg,
                  "largest: variable 'w' of shape (1073741824, 1073741824) float32 needs "
                  "4.29497e+09 GiB, "))
      << msg;
}

TEST(CostModelSizeTest, WithoutALimitMemorySumsStayInInt64) {
  // Four devices, no limit: w's B candidate (2^64 bytes) is capped, its
  // split candidates keep their exact 2^62 bytes, and no sum of one
  // candidate per node (taking every node's largest) can wrap.
  const OpGraph g = testing::LinearModel(1, k2p30, k2p30);
  CostOptions options;
  options.memory_limit_bytes = kNoMemoryLimit;
  auto built = BuildCostModel(g, Strategy(Mesh({4})), TwoLevelCluster(), options);
  ASSERT_TRUE(built.ok()) << built.status().message();
  const CostModel& model = *built.value();
  const CostGraph& cg = model.graph();
  const int w = model.NodeOf("w");
  ASSERT_GE(w, 0);
  EXPECT_EQ(cg.node(w).min_memory_bytes, int64_t{1} << 62);
  __int128 largest_total = 0;
  std::vector<int> largest(cg.num_nodes(), 0);
  for (int u = 0; u < cg.num_nodes(); ++u) {
    int64_t most = -1;
    for (int c = 0; c < cg.num_candidates(u); ++c) {
      const int64_t m = cg.node(u).candidates[c].memory_bytes;
      EXPECT_GE(m, 0);
      if (m > most) most = m, largest[u] = c;
    }
    largest_total += most;
  }
  EXPECT_LE(largest_total, static_cast<__int128>(kNoMemoryLimit));
  EXPECT_GE(cg.Evaluate(largest).value().memory_bytes, int64_t{1} << 62);
}

TEST(BoxingSizeTest, BytesOfAHugeTensorSaturateInsteadOfWrapping) {
  // [2^60] float64 (as a compute dtype may make it) P -> B on 4 ranks:
  // each rank sends 2^60 - 2^58 + 3 x 2^58 = 1.5 x 2^60 elements, 12 x 2^60
  // bytes > 2^63; S(0) -> B sends 3 x 2^58 x 8 = 3 x 2^61 bytes, which fits.
  const TensorDesc desc{Shape{int64_t{1} << 60}, DataType::kFloat64};
  const Placement p = Mesh({4});
  auto reduce = PlanBoxing(desc, p, NdSbp::Parse("(P)").value(), p, NdSbp::Parse("(B)").value());
  ASSERT_TRUE(reduce.ok()) << reduce.status().message();
  EXPECT_EQ(reduce.value().MaxBytesSent(), kNoMemoryLimit);  // INT64_MAX
  EXPECT_EQ(reduce.value().TotalBytesSent(), kNoMemoryLimit);
  auto gather = PlanBoxing(desc, p, NdSbp::Parse("(S(0))").value(), p, NdSbp::Parse("(B)").value());
  ASSERT_TRUE(gather.ok());
  EXPECT_EQ(gather.value().MaxBytesSent(), 3 * (int64_t{1} << 61));
}

}  // namespace
}  // namespace ofl
