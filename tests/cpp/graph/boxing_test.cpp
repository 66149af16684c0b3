// The boxing planner: hand-worked plans and per-rank byte counts for every
// conversion kind on [4] and [2, 2] with a (5, 3) float32 tensor (uneven:
// 5 rows over 4 are 2, 1, 1, 1; 3 columns over 4 are 1, 1, 1, 0), the
// nested-split fallback, cross-placement plans, errors, and the BOXING tasks
// EmitBoxing writes. Byte counts follow runtime/inprocess_communicator.cpp.
#include "graph/boxing.h"

#include <gtest/gtest.h>

#include <set>

#include "graph/boxing_tasks.h"

namespace ofl {
namespace {

using Conf = proto::BoxingConf;
using Bytes = std::map<int64_t, int64_t>;

const TensorDesc kX{Shape({5, 3}), DataType::kFloat32};  // 60 bytes, 12 per row

Placement Make(std::vector<int64_t> ranks, Shape hierarchy = {}) {
  return Placement::Create(DeviceType::kCPU, std::move(ranks), std::move(hierarchy)).value();
}
NdSbp Nd(const std::string& text) { return NdSbp::Parse(text).value(); }

BoxingPlan Plan(const Placement& p, const std::string& from, const std::string& to) {
  auto plan = PlanBoxing(kX, p, Nd(from), p, Nd(to), "x");
  EXPECT_TRUE(plan.ok()) << plan.status().message();
  return plan.value();
}

std::vector<Conf::Kind> Kinds(const BoxingPlan& plan) {
  std::vector<Conf::Kind> kinds;
  for (const auto& s : plan.steps) kinds.push_back(s.kind);
  return kinds;
}

struct OneDimCase {
  std::string from, to;
  Conf::Kind kind;
  Bytes bytes;
};

TEST(BoxingPlanTest, EveryKindOnFourRanksWithUnevenParts) {
  const Placement p = Make({0, 1, 2, 3});
  const std::vector<OneDimCase> cases = {
      // all-reduce of 15 elements, flat parts 4, 4, 4, 3: 15 + 2 |own| each
      {"P", "B", Conf::ALL_REDUCE, {{0, 92}, {1, 92}, {2, 92}, {3, 84}}},
      // reduce-scatter, row parts of 6, 3, 3, 3 elements: 15 - |own|
      {"P", "S(0)", Conf::REDUCE_SCATTER, {{0, 36}, {1, 48}, {2, 48}, {3, 48}}},
      // column parts of 5, 5, 5, 0 elements
      {"P", "S(1)", Conf::REDUCE_SCATTER, {{0, 40}, {1, 40}, {2, 40}, {3, 60}}},
      // all-gather: 3 |own|
      {"S(0)", "B", Conf::ALL_GATHER, {{0, 72}, {1, 36}, {2, 36}, {3, 36}}},
      {"S(1)", "B", Conf::ALL_GATHER, {{0, 60}, {1, 60}, {2, 60}, {3, 0}}},
      // all-to-all: own rows x the other ranks' columns (3 - own columns)
      {"S(0)", "S(1)", Conf::ALL_TO_ALL, {{0, 16}, {1, 8}, {2, 8}, {3, 12}}},
      // own columns x the other ranks' rows (5 - own rows)
      {"S(1)", "S(0)", Conf::ALL_TO_ALL, {{0, 12}, {1, 16}, {2, 16}, {3, 0}}},
      {"B", "S(0)", Conf::LOCAL_SLICE, {{0, 0}, {1, 0}, {2, 0}, {3, 0}}},
      {"B", "P", Conf::ZERO_FILL, {{0, 0}, {1, 0}, {2, 0}, {3, 0}}},
      {"S(1)", "P", Conf::SCATTER_LOCAL, {{0, 0}, {1, 0}, {2, 0}, {3, 0}}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.from + " -> " + c.to);
    BoxingPlan plan = Plan(p, c.from, c.to);
    ASSERT_EQ(plan.steps.size(), 1u);
    EXPECT_EQ(plan.steps[0].kind, c.kind);
    EXPECT_EQ(plan.steps[0].hierarchy_axis, 0);
    EXPECT_EQ(plan.steps[0].from, Nd(c.from));
    EXPECT_EQ(plan.steps[0].to, Nd(c.to));
    EXPECT_EQ(plan.bytes_sent, c.bytes);
    EXPECT_EQ(plan.steps[0].bytes_sent, c.bytes);
  }
  BoxingPlan same = Plan(p, "S(0)", "S(0)");
  EXPECT_TRUE(same.steps.empty());
  EXPECT_EQ(same.MaxBytesSent(), 0);
}

TEST(BoxingPlanTest, TwoDimReducesWhileSlicedThenGathers) {
  // (S(0), P) -> (B, B) on [2, 2]. Axis 0 cuts 5 rows into 3 | 2. Reducing
  // axis 1 first: all-reduces of 9 and 6 elements over 2 ranks (each rank
  // sends n), then all-gathers of 9 and 6 elements on axis 0. The other
  // order would all-reduce the whole 15 elements: 96, 96, 84, 84.
  BoxingPlan plan = Plan(Make({0, 1, 2, 3}, {2, 2}), "(S(0), P)", "(B, B)");
  ASSERT_EQ(plan.steps.size(), 2u) << plan.ToString();
  EXPECT_EQ(plan.steps[0].kind, Conf::ALL_REDUCE);
  EXPECT_EQ(plan.steps[0].hierarchy_axis, 1);
  EXPECT_EQ(plan.steps[0].to, Nd("(S(0), B)"));
  EXPECT_EQ(plan.steps[1].kind, Conf::ALL_GATHER);
  EXPECT_EQ(plan.steps[1].hierarchy_axis, 0);
  EXPECT_EQ(plan.bytes_sent, (Bytes{{0, 72}, {1, 72}, {2, 48}, {3, 48}}));
}

TEST(BoxingPlanTest, NestedSplitsGatherInnerAxisFirst) {
  // (S(0), S(0)): ranks hold rows [0,2) [2,3) [3,4) [4,5). Gathering axis 0
  // first is unsound; axis 1 first gathers 2|1 and 1|1 rows, then axis 0
  // gathers 3 and 2 rows.
  BoxingPlan plan = Plan(Make({0, 1, 2, 3}, {2, 2}), "(S(0), S(0))", "(B, B)");
  ASSERT_EQ(Kinds(plan), (std::vector<Conf::Kind>{Conf::ALL_GATHER, Conf::ALL_GATHER}));
  EXPECT_EQ(plan.steps[0].hierarchy_axis, 1);
  EXPECT_EQ(plan.steps[1].hierarchy_axis, 0);
  EXPECT_EQ(plan.bytes_sent, (Bytes{{0, 60}, {1, 48}, {2, 36}, {3, 36}}));
}

TEST(BoxingPlanTest, NestedSplitFallsBackToSendRecv) {
  // (S(0), S(0)) -> (B, S(0)) is not an all-gather on axis 0: rank (i, j)
  // needs rows [0,3) for j = 0 and [3,5) for j = 1.
  BoxingPlan plan = Plan(Make({0, 1, 2, 3}, {2, 2}), "(S(0), S(0))", "(B, S(0))");
  ASSERT_EQ(Kinds(plan), (std::vector<Conf::Kind>{Conf::SEND_RECV}));
  EXPECT_EQ(plan.steps[0].hierarchy_axis, -1);
  // rank 0 keeps [0,2) and gets [2,3) from 1; rank 1 gets [3,4) from 2 and
  // [4,5) from 3; rank 2 gets [0,2) from 0, [2,3) from 1; rank 3 keeps
  // [4,5) and gets [3,4) from 2.
  EXPECT_EQ(plan.steps[0].transfers.size(), 8u);
  EXPECT_EQ(plan.bytes_sent, (Bytes{{0, 24}, {1, 24}, {2, 24}, {3, 12}}));
  // Swapping the split axes between the hierarchy axes has no sound order.
  EXPECT_EQ(Kinds(Plan(Make({0, 1, 2, 3}, {2, 2}), "(S(0), S(1))", "(S(1), S(0))")),
            (std::vector<Conf::Kind>{Conf::SEND_RECV}));
}

// Sum of the bytes each receiver gets from other ranks in a SEND_RECV step.
Bytes Received(const BoxingStep& step) {
  Bytes out;
  for (const BoxTransfer& t : step.transfers) {
    if (t.sender != t.receiver) out[t.receiver] += t.shape.NumElements() * 4;
  }
  return out;
}

TEST(BoxingPlanTest, SeveralAxesMoveOnlyWhatIsMissingTwoByThree) {
  // 600 x 600 float32 (1,440,000 bytes) on [2, 3], (S(0), B) -> (S(1), S(0)).
  // Rank r = 3 i + j holds rows [300 i, 300 i + 300), all columns; it needs
  // rows [200 j, 200 j + 200) x columns [300 i, 300 i + 300) (240,000 bytes).
  // Lacking, rows not held x 300 columns x 4 bytes:
  //   r0 rows [0,200) all held: 0;       r1 [200,400) lacks [300,400): 120,000
  //   r2 [400,600) lacks all: 240,000;   r3 [0,200) lacks all: 240,000
  //   r4 [200,400) lacks [200,300): 120,000;  r5 [400,600) all held: 0
  // Total 720,000 = 0.72 MB. The axis-by-axis plan (all-to-all on axis 0,
  // 300 x 300 x 4 = 360,000 bytes from every rank, then a local slice)
  // sends 2,160,000 (busiest 360,000).
  const TensorDesc x{Shape({600, 600}), DataType::kFloat32};
  const Placement p = Make({0, 1, 2, 3, 4, 5}, {2, 3});
  BoxingPlan plan = PlanBoxing(x, p, Nd("(S(0), B)"), p, Nd("(S(1), S(0))"), "x").value();
  ASSERT_EQ(Kinds(plan), (std::vector<Conf::Kind>{Conf::SEND_RECV})) << plan.ToString();
  EXPECT_EQ(Received(plan.steps[0]), (Bytes{{1, 120000}, {2, 240000}, {3, 240000}, {4, 120000}}));
  // Senders, receivers in rank order, each from the least-loaded holder
  // (then the lowest rank): r1's rows [300,400) from {3,4,5} -> 3; r2's
  // from {3 (120,000), 4, 5} -> 4; r3's rows [0,200) from {0,1,2} -> 0; r4's
  // rows [200,300) from {0 (240,000), 1, 2} -> 1.
  EXPECT_EQ(plan.bytes_sent,
            (Bytes{{0, 240000}, {1, 120000}, {2, 0}, {3, 120000}, {4, 240000}, {5, 0}}));
  EXPECT_EQ(plan.TotalBytesSent(), 720000);
}

TEST(BoxingPlanTest, SeveralAxesMoveOnlyWhatIsMissingThreeByTwo) {
  // 600 x 600 float32 on [3, 2], (B, S(0)) -> (S(0), B). Rank r = 2 i + j
  // holds rows [300 j, 300 j + 300) and needs rows [200 i, 200 i + 200), all
  // 600 columns (2,400 bytes a row). Lacking:
  //   r0 [0,200) held: 0;  r1 [0,200) none held: 480,000
  //   r2 [200,400) lacks [300,400): 240,000;  r3 lacks [200,300): 240,000
  //   r4 [400,600) none held: 480,000;  r5 held: 0
  // Total 1,440,000 = 1.44 MB. The axis-by-axis plan (all-gather on axis 1:
  // 300 rows = 720,000 bytes from every rank, then a local slice) sends
  // 4,320,000 (busiest 720,000).
  const TensorDesc x{Shape({600, 600}), DataType::kFloat32};
  const Placement p = Make({0, 1, 2, 3, 4, 5}, {3, 2});
  BoxingPlan plan = PlanBoxing(x, p, Nd("(B, S(0))"), p, Nd("(S(0), B)"), "x").value();
  ASSERT_EQ(Kinds(plan), (std::vector<Conf::Kind>{Conf::SEND_RECV})) << plan.ToString();
  EXPECT_EQ(Received(plan.steps[0]), (Bytes{{1, 480000}, {2, 240000}, {3, 240000}, {4, 480000}}));
  // Holders of rows [0,300): 0, 2, 4; of [300,600): 1, 3, 5. r1 <- 0; r2's
  // [300,400) <- 1; r3's [200,300) <- 2 (0 has sent 480,000); r4 <- 3.
  EXPECT_EQ(plan.bytes_sent,
            (Bytes{{0, 480000}, {1, 240000}, {2, 240000}, {3, 480000}, {4, 0}, {5, 0}}));
  EXPECT_EQ(plan.TotalBytesSent(), 1440000);
}

TEST(BoxingPlanTest, CollectivesStayWhenTheyMoveNoMore) {
  // (S(0), S(1)) -> (B, B) on [2, 2], 5 x 3. Blocks (rows 3 | 2, columns
  // 2 | 1) of 24, 12, 16, 8 bytes. Axis 1 all-gathers 24 | 12 and 16 | 8,
  // then axis 0 the row halves of 36 and 24 bytes: 60, 48, 40, 32, total
  // 180 = what the ranks lack (each lacks the other three blocks). The
  // direct plan moves the same 180 but rank 0, the one holder of its block,
  // sends it to three ranks: 72 > 60, so the collectives stay.
  BoxingPlan plan = Plan(Make({0, 1, 2, 3}, {2, 2}), "(S(0), S(1))", "(B, B)");
  ASSERT_EQ(Kinds(plan), (std::vector<Conf::Kind>{Conf::ALL_GATHER, Conf::ALL_GATHER}));
  EXPECT_EQ(plan.bytes_sent, (Bytes{{0, 60}, {1, 48}, {2, 40}, {3, 32}}));
}

TEST(BoxingPlanTest, FallbackReducesPartialAxesFirst) {
  // (P, S(0)) -> (S(0), S(0)): P -> S(0) on axis 0 is unsound under the
  // inner S(0), so axis 0 is reduce-scattered along the other tensor axis,
  // then the rows move by SEND_RECV.
  BoxingPlan plan = Plan(Make({0, 1, 2, 3}, {2, 2}), "(P, S(0))", "(S(0), S(0))");
  ASSERT_EQ(Kinds(plan), (std::vector<Conf::Kind>{Conf::REDUCE_SCATTER, Conf::SEND_RECV}));
  EXPECT_EQ(plan.steps[0].hierarchy_axis, 0);
  EXPECT_EQ(plan.steps[0].to, Nd("(S(1), S(0))"));
  // (P, P) -> (P, B) keeps axis 0's partial sums: one all-reduce on axis 1.
  BoxingPlan kept = Plan(Make({0, 1, 2, 3}, {2, 2}), "(P, P)", "(P, B)");
  ASSERT_EQ(Kinds(kept), (std::vector<Conf::Kind>{Conf::ALL_REDUCE}));
  EXPECT_EQ(kept.steps[0].hierarchy_axis, 1);
}

TEST(BoxingPlanTest, CrossPlacementSendsOverlaps) {
  // S(0) on [0, 1] (rows 3 | 2) -> S(0) on [2, 3, 4] (rows 2 | 2 | 1).
  auto plan = PlanBoxing(kX, Make({0, 1}), Nd("S(0)"), Make({2, 3, 4}), Nd("S(0)"), "x");
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  ASSERT_EQ(Kinds(plan.value()), (std::vector<Conf::Kind>{Conf::SEND_RECV}));
  EXPECT_EQ(plan.value().steps[0].transfers.size(), 4u);
  EXPECT_EQ(plan.value().bytes_sent, (Bytes{{0, 36}, {1, 24}, {2, 0}, {3, 0}, {4, 0}}));

  // P is reduce-scattered on the source first (rows, the longest axis):
  // 15 - 9 and 15 - 6 elements; then both halves go to both targets.
  plan = PlanBoxing(kX, Make({0, 1}), Nd("P"), Make({2, 3}), Nd("B"), "x");
  ASSERT_TRUE(plan.ok());
  ASSERT_EQ(Kinds(plan.value()), (std::vector<Conf::Kind>{Conf::REDUCE_SCATTER, Conf::SEND_RECV}));
  EXPECT_EQ(plan.value().bytes_sent, (Bytes{{0, 24 + 72}, {1, 36 + 48}, {2, 0}, {3, 0}}));

  // A replica: rank 1 keeps its own rows [0, 2); rank 2's rows [2, 4) come
  // from the least-loaded holder (a tie: rank 0), rank 3's [4, 5) then from 1.
  plan = PlanBoxing(kX, Make({0, 1}), Nd("B"), Make({1, 2, 3}), Nd("S(0)"), "x");
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan.value().bytes_sent, (Bytes{{0, 24}, {1, 12}, {2, 0}, {3, 0}}));

  // A P target across placements: coordinate 0 holds the value (rank 1,
  // from itself), rank 2 holds zeros.
  plan = PlanBoxing(kX, Make({0, 1}), Nd("B"), Make({1, 2}), Nd("P"), "x");
  ASSERT_TRUE(plan.ok());
  ASSERT_EQ(plan.value().steps[0].transfers.size(), 1u);
  EXPECT_EQ(plan.value().steps[0].transfers[0].sender, 1);
  EXPECT_EQ(plan.value().MaxBytesSent(), 0);

  // A scalar has no axis to scatter: P reduces by all-reduce.
  plan = PlanBoxing({Shape(), DataType::kFloat64}, Make({0, 1}), Nd("P"), Make({2}), Nd("B"));
  ASSERT_TRUE(plan.ok());
  ASSERT_EQ(Kinds(plan.value()), (std::vector<Conf::Kind>{Conf::ALL_REDUCE, Conf::SEND_RECV}));
  EXPECT_EQ(plan.value().bytes_sent, (Bytes{{0, 8 + 8}, {1, 8}, {2, 0}}));
}

TEST(BoxingPlanTest, ErrorsNameTheTensorAndValue) {
  const Placement flat = Make({0, 1, 2, 3});
  const Placement grid = Make({0, 1, 2, 3}, {2, 2});
  auto length = PlanBoxing(kX, grid, Nd("S(0)"), grid, Nd("(B, B)"), "fc.weight");
  ASSERT_FALSE(length.ok());
  EXPECT_NE(length.status().message().find("fc.weight"), std::string::npos);
  EXPECT_NE(length.status().message().find("(S(0)) has 1 axes but the hierarchy (2, 2) has 2"),
            std::string::npos)
      << length.status().message();
  auto axis = PlanBoxing(kX, flat, Nd("B"), flat, Nd("S(2)"), "fc.weight");
  ASSERT_FALSE(axis.ok());
  EXPECT_NE(axis.status().message().find("S(2) splits an axis the shape (5, 3) does not have"),
            std::string::npos)
      << axis.status().message();
  auto gpu = Placement::Create(DeviceType::kCUDA, {0, 1, 2, 3}).value();
  auto device = PlanBoxing(kX, flat, Nd("B"), gpu, Nd("B"), "fc.weight");
  ASSERT_FALSE(device.ok());
  EXPECT_NE(device.status().message().find("device types differ"), std::string::npos);
}

TEST(EmitBoxingTest, TasksGroupsAndRegisters) {
  const Placement grid = Make({0, 1, 2, 3}, {2, 2});
  BoxingPlan plan = Plan(grid, "(S(0), P)", "(B, B)");
  PlanBuilder builder(4);
  std::vector<int64_t> inputs;
  for (int64_t r = 0; r < 4; ++r) {
    inputs.push_back(builder.AddRegister("x", r, {Shape({r < 2 ? 3 : 2, 3}), kX.dtype}));
  }
  std::vector<int64_t> outputs = EmitBoxing(plan, "x", inputs, &builder);
  const proto::Plan& p = builder.plan();
  ASSERT_EQ(p.tasks_size(), 8);
  ASSERT_EQ(outputs.size(), 4u);
  for (int64_t r = 0; r < 4; ++r) {
    EXPECT_EQ(p.registers(outputs[r]).rank(), r);
    EXPECT_EQ(p.registers(outputs[r]).desc().shape().dims_size(), 2);
    EXPECT_EQ(p.registers(outputs[r]).desc().shape().dims(0), 5);
  }
  // Step 0: all-reduce on axis 1, groups {0, 1} and {2, 3}; step 1:
  // all-gather on axis 0, groups {0, 2} and {1, 3}; four distinct ids.
  std::set<int64_t> ids;
  for (const auto& t : p.tasks()) {
    EXPECT_EQ(t.kind(), proto::TaskProto::BOXING);
    EXPECT_EQ(t.stream(), kBoxingStream);
    ids.insert(t.boxing_conf().group_id());
  }
  EXPECT_EQ(ids.size(), 4u);
  const Conf& first = p.tasks(2).boxing_conf();  // rank 2, step 0
  EXPECT_EQ(first.kind(), Conf::ALL_REDUCE);
  EXPECT_EQ(std::vector<int64_t>(first.group().begin(), first.group().end()),
            (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(p.tasks(3).boxing_conf().group_id(), first.group_id());
  const Conf& second = p.tasks(5).boxing_conf();  // rank 1, step 1
  EXPECT_EQ(second.kind(), Conf::ALL_GATHER);
  EXPECT_EQ(second.split_axis(), 0);
  EXPECT_EQ(std::vector<int64_t>(second.group().begin(), second.group().end()),
            (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(p.registers(p.tasks(2).outputs(0)).desc().shape().dims(0), 2);  // rows [3, 5)

  // Cross placement: a source-only rank has no output, a target-only rank
  // no input; one group of all five ranks.
  auto cross = PlanBoxing(kX, Make({0, 1}), Nd("S(0)"), Make({2, 3, 4}), Nd("S(0)"), "x").value();
  PlanBuilder b2(5);
  std::vector<int64_t> in2 = {b2.AddRegister("x", 0, {Shape({3, 3}), kX.dtype}),
                              b2.AddRegister("x", 1, {Shape({2, 3}), kX.dtype})};
  std::vector<int64_t> out2 = EmitBoxing(cross, "x", in2, &b2);
  ASSERT_EQ(out2.size(), 3u);
  ASSERT_EQ(b2.plan().tasks_size(), 5);
  const auto& source_task = b2.plan().tasks(0);
  EXPECT_EQ(source_task.inputs_size(), 1);
  EXPECT_EQ(source_task.outputs_size(), 0);
  EXPECT_EQ(source_task.boxing_conf().sends_size(), 2);  // rows to ranks 2 and 3
  EXPECT_EQ(source_task.boxing_conf().group_size(), 5);
  const auto& target_task = b2.plan().tasks(3);  // rank 3: a row from 0, a row from 1
  EXPECT_EQ(target_task.inputs_size(), 0);
  EXPECT_EQ(target_task.boxing_conf().recvs_size(), 2);
}

}  // namespace
}  // namespace ofl
