// DistributedSession's per-rank view, as sharded checkpoints use it: a
// variable of 7 rows laid out (S(0), B) on a [2, 2] mesh has the balanced
// row split worked out by hand (4 + 3 rows), primary slices at coordinate 0
// of the B axis, and Get/SetVariableSlice read and write one rank's slice,
// with errors that name the variable, the rank and both shapes. Run fetches
// any tensor of the graph, named at Create or not.
#include "oneflow_lite/api/distributed_session.h"

#include <gtest/gtest.h>

#include "oneflow_lite/api/strategy_spec.h"
#include "tests/cpp/graph/model_makers.h"

namespace ofl {
namespace {

std::unique_ptr<DistributedSession> RowSplitSession() {
  OpGraph g;
  CHECK(g.AddInput("x", {{4, 7}, DataType::kFloat32}).ok());
  Tensor w({7, 5}, DataType::kFloat32);
  for (int64_t i = 0; i < w.numel(); ++i) w.data<float>()[i] = static_cast<float>(i);
  CHECK(g.AddVariable("w", w, true).ok());
  std::string y = g.AddOp("matmul", {"x", "w"}, {}, "fc").value()[0];
  StrategySpec spec;
  spec.pinned["w"] = "(S(0), B)";
  Strategy s = MakeStrategy(g, testing::Mesh({2, 2}), spec).value();
  DistributedOptions options;
  options.num_threads = 1;
  return DistributedSession::Create(g, s, {y}, options).value();
}

TEST(DistributedSessionSlices, LayoutIsTheBalancedSplitWithOnePrimaryPerSlice) {
  auto session = RowSplitSession();
  EXPECT_EQ(session->LocalRanks(), (std::vector<int64_t>{0, 1, 2, 3}));
  auto layout = session->VariableLayoutOf("w");
  ASSERT_TRUE(layout.ok()) << layout.status().message();
  const VariableLayout& l = layout.value();
  EXPECT_EQ(l.shape, Shape({7, 5}));
  EXPECT_EQ(l.nd_sbp.ToString(), "(S(0), B)");
  EXPECT_EQ(l.placement.hierarchy(), Shape({2, 2}));
  ASSERT_EQ(l.slices.size(), 4u);
  const std::vector<int64_t> first_row = {0, 0, 4, 4};
  const std::vector<int64_t> rows = {4, 4, 3, 3};
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(l.slices[i].offset, (std::vector<int64_t>{first_row[i], 0})) << i;
    EXPECT_EQ(l.slices[i].shape, Shape({rows[i], 5})) << i;
    EXPECT_FALSE(l.slices[i].partial);
    EXPECT_EQ(l.primary[i], i % 2 == 0) << i;
  }
  EXPECT_EQ(session->VariableLayoutOf("v").status().message(), "unknown variable 'v'");
}

// Run fetches any tensor: y named at Create (x of ones: y[i][j] = sum over k
// of w[k][j] = 5k + j, so 105 + 7j), the input x not named there, and the
// variable w (its value after the step: untouched, nothing trains it); a
// tensor fetched twice comes twice in buffers of its own.
TEST(DistributedSessionSlices, RunFetchesAnyTensorOfTheGraph) {
  auto session = RowSplitSession();
  const Tensor x = Tensor::Full({4, 7}, DataType::kFloat32, 1.0);
  std::vector<Tensor> out;
  Status run = session->Run({{"x", x}}, {"fc/out_0", "x", "w", "fc/out_0"}, &out);
  ASSERT_TRUE(run.ok()) << run.message();
  ASSERT_EQ(out.size(), 4u);
  for (int64_t i = 0; i < 4; ++i) {
    for (int64_t j = 0; j < 5; ++j) EXPECT_FLOAT_EQ(out[0].data<float>()[i * 5 + j], 105 + 7 * j);
  }
  EXPECT_EQ(out[1].shape(), Shape({4, 7}));
  EXPECT_FLOAT_EQ(out[1].data<float>()[27], 1.0f);
  EXPECT_FLOAT_EQ(out[2].data<float>()[34], 34.0f);
  EXPECT_NE(out[0].raw(), out[3].raw());
  EXPECT_FLOAT_EQ(out[3].data<float>()[19], 105 + 7 * 4);
  EXPECT_EQ(session->Run({{"x", x}}, {"nope"}, &out).message(),
            "run: cannot fetch unknown tensor 'nope'");
}

TEST(DistributedSessionSlices, GetAndSetOneRanksSlice) {
  auto session = RowSplitSession();
  auto slice = session->GetVariableSlice("w", 3);
  ASSERT_TRUE(slice.ok()) << slice.status().message();
  EXPECT_EQ(slice.value().shape(), Shape({3, 5}));
  EXPECT_EQ(slice.value().data<float>()[0], 20.0f);  // row 4 of 0, 1, ... 34
  ASSERT_TRUE(
      session->SetVariableSlice("w", 3, Tensor::Full({3, 5}, DataType::kFloat32, 9.0)).ok());
  EXPECT_EQ(session->GetVariableSlice("w", 3).value().data<float>()[14], 9.0f);
  EXPECT_EQ(session->GetVariableSlice("w", 2).value().data<float>()[0], 20.0f);  // untouched
  EXPECT_EQ(
      session->SetVariableSlice("w", 1, Tensor::Full({3, 5}, DataType::kFloat64, 0.0)).message(),
      "set_variable_slice: variable 'w' on rank 1 expects float32 (4, 5), got float64 "
      "(3, 5)");
  EXPECT_EQ(session->GetVariableSlice("w", 7).status().message(),
            "variable 'w' has no slice on rank 7 in this process (its slices here: ranks "
            "[0, 1, 2, 3])");
}

}  // namespace
}  // namespace ofl
