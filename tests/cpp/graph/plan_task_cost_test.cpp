// Task pricing (graph/plan_task_cost.h) on a hand-built plan and the
// two-level test cluster (fast: groups of 4, 100 GB/s, 1 us per step; slow:
// 10 GB/s, 10 us per step; 1e12 FLOP/s), each figure worked out by hand.
#include "graph/plan_task_cost.h"

#include <gtest/gtest.h>

#include "model_makers.h"
#include "tests/cpp/graph/plan_makers.h"

namespace ofl {
namespace {

using testing::AddRegister;
using testing::AddTask;

void SetBoxing(proto::TaskProto* t, proto::BoxingConf::Kind kind,
               const std::vector<int64_t>& group) {
  t->mutable_boxing_conf()->set_kind(kind);
  t->mutable_boxing_conf()->set_group_id(t->id());
  for (int64_t r : group) t->mutable_boxing_conf()->add_group(r);
}

TEST(PlanTaskCostTest, ComputeCopiesAndCollectivesByHand) {
  proto::Plan plan;
  const int64_t x = AddRegister(&plan, 0, {4, 8}), w = AddRegister(&plan, 0, {8, 16});
  const int64_t y = AddRegister(&plan, 0, {4, 16}), z = AddRegister(&plan, 0, {64});
  proto::TaskProto* mm = AddTask(&plan, proto::TaskProto::COMPUTE, 0, {x, w}, {y});
  mm->mutable_op_conf()->set_op_type("matmul");
  mm->mutable_op_conf()->set_name("mm");
  proto::TaskProto* reshape = AddTask(&plan, proto::TaskProto::COMPUTE, 0, {y}, {z});
  reshape->mutable_op_conf()->set_op_type("reshape");
  reshape->mutable_op_conf()->set_name("flat");
  proto::AttrValue shape;
  shape.mutable_ints()->add_values(64);
  (*reshape->mutable_op_conf()->mutable_attrs())["shape"] = shape;
  const int64_t g = AddRegister(&plan, 0, {250});  // 1000 bytes
  SetBoxing(AddTask(&plan, proto::TaskProto::BOXING, 0, {g}, {g}), proto::BoxingConf::ALL_REDUCE,
            {0, 1});
  const int64_t half = AddRegister(&plan, 0, {125}), full = AddRegister(&plan, 0, {250});
  SetBoxing(AddTask(&plan, proto::TaskProto::BOXING, 0, {half}, {full}),
            proto::BoxingConf::ALL_GATHER, {0, 4});
  SetBoxing(AddTask(&plan, proto::TaskProto::BOXING, 0, {full}, {half}),
            proto::BoxingConf::LOCAL_SLICE, {0, 1});
  plan.set_num_ranks(8);

  TaskCostOptions options;
  options.memory_bandwidth = 1e9;
  options.boxing_overhead_s = 5e-6;
  options.kernel_overhead_s = 2e-6;
  Maybe<std::vector<TaskCost>> costs = PriceTasks(plan, testing::TwoLevelCluster(), options);
  ASSERT_TRUE(costs.ok()) << costs.status().ToString();
  const std::vector<TaskCost>& c = costs.value();
  ASSERT_EQ(c.size(), 5u);
  auto near = [](double a, double b) { EXPECT_NEAR(a, b, 1e-18 + 1e-9 * b); };
  // matmul: 2 x 4 x 8 x 16 = 1024 FLOPs at 1e12 FLOP/s.
  EXPECT_EQ(c[0].category, "matmul");
  near(c[0].flops, 1024.0);
  near(c[0].seconds, 1024.0 / 1e12);
  // reshape: no FLOPs; reads and writes its 256-byte output at 1 GB/s, plus 2 us.
  EXPECT_EQ(c[1].category, "reshape");
  near(c[1].seconds, 512.0 / 1e9 + 2e-6);
  // all-reduce of 1000 bytes on 2 ranks of one fast group: 2 (p-1)/p x 1000 =
  // 1000 bytes sent, 2 (p-1) = 2 steps of 1 us, 100 GB/s; plus the 5 us fixed
  // cost.
  EXPECT_EQ(c[2].category, "boxing all_reduce");
  EXPECT_EQ(c[2].bytes, 1000);
  near(c[2].seconds, 2e-6 + 1000.0 / 100e9 + 5e-6);
  // all-gather of 500-byte halves on ranks 0 and 4 (two fast groups: the slow
  // level): (p-1)/p x 1000 = 500 bytes, p-1 = 1 step of 10 us, 10 GB/s.
  EXPECT_EQ(c[3].bytes, 500);
  near(c[3].seconds, 10e-6 + 500.0 / 10e9 + 5e-6);
  // A local slice copies 1000 + 500 bytes.
  EXPECT_EQ(c[4].category, "boxing local_slice");
  near(c[4].seconds, 1500.0 / 1e9 + 5e-6);
}

proto::TaskProto* AddMatmul(proto::Plan* plan, int64_t rank, int64_t n) {
  const int64_t x = AddRegister(plan, rank, {4, 8}), w = AddRegister(plan, rank, {8, n});
  proto::TaskProto* t =
      AddTask(plan, proto::TaskProto::COMPUTE, rank, {x, w}, {AddRegister(plan, rank, {4, n})});
  t->mutable_op_conf()->set_op_type("matmul");
  t->mutable_op_conf()->set_name("mm" + std::to_string(t->id()));
  return t;
}

// Rank 0: matmuls [4, 8] x [8, 16] (1024 FLOPs) and [4, 8] x [8, 32]
// (2048); rank 1 (same group of 4): [4, 8] x [8, 16] again. Every register
// is its own matmul's.
proto::Plan ThreeMatmuls() {
  proto::Plan plan;
  AddMatmul(&plan, 0, 16);
  AddMatmul(&plan, 0, 32);
  AddMatmul(&plan, 1, 16);
  plan.set_num_ranks(2);
  return plan;
}

TEST(PlanTaskCostTest, AShapeEntryBeatsTheCurveAndAMissingShapeFallsBack) {
  const proto::Plan plan = ThreeMatmuls();
  Maybe<std::string> key = KernelShapeKey(plan, plan.tasks(0));
  ASSERT_TRUE(key.ok()) << key.status().message();
  EXPECT_EQ(key.value().rfind("float32(4, 8) float32(8, 16) {", 0), 0u) << key.value();
  EXPECT_EQ(KernelShapeKey(plan, plan.tasks(2)).value(), key.value());
  EXPECT_NE(KernelShapeKey(plan, plan.tasks(1)).value(), key.value());
  // One curve point (1024 FLOPs in 1e-6 s), the [8, 16] kernel measured at
  // 3e-7 s, and 2 devices computing at once x 1.5.
  proto::Cluster p = testing::TwoLevelCluster().proto();
  auto entry = [&](double flops, double seconds, const std::string& shape) {
    proto::ComputeEntry* e = p.mutable_device()->add_compute();
    e->set_op_type("matmul");
    e->set_dtype("float32");
    e->set_flops(flops);
    e->set_seconds(seconds);
    e->set_shape(shape);
  };
  entry(1024, 1e-6, "");
  entry(1024, 3e-7, key.value());
  proto::Contention* two = p.mutable_device()->add_contention();
  two->set_devices(2);
  two->set_factor(1.5);
  Maybe<Cluster> cluster = Cluster::FromProto(p);
  ASSERT_TRUE(cluster.ok()) << cluster.status().message();
  Maybe<std::vector<TaskCost>> costs = PriceTasks(plan, cluster.value(), {});
  ASSERT_TRUE(costs.ok()) << costs.status().ToString();
  const std::vector<TaskCost>& c = costs.value();
  auto near = [](double a, double b) { EXPECT_NEAR(a, b, 1e-18 + 1e-9 * b); };
  // Its own entry x contention: 3e-7 x 1.5, on both ranks.
  near(c[0].seconds, 4.5e-7);
  near(c[2].seconds, 4.5e-7);
  EXPECT_TRUE(c[0].exact && c[0].tabled);
  // No entry of its shape: the curve's one point's rate, 2048 / 1024 x 1e-6, x 1.5.
  near(c[1].seconds, 3e-6);
  EXPECT_TRUE(c[1].tabled);
  EXPECT_FALSE(c[1].exact);
}

TEST(PlanTaskCostTest, ACacheModelAddsTheColdInputsBytes) {
  // Every register is touched by its own matmul alone, so an input's reuse
  // distance is the rest of its rank's bytes. Rank 0: mm0 touches 128 + 512
  // + 256 = 896 bytes, mm1 128 + 1024 + 512 = 1664; mm0's x: 1664 + its own
  // 128 = 1792 <= 2000 (hot), its w: 1664 + 512 = 2176 (cold). mm1's x: 896
  // + 128 (hot), its w: 896 + 1024 = 1920 (hot). Rank 1: mm2 alone,
  // distance 0: both hot.
  const proto::Plan plan = ThreeMatmuls();
  proto::Cluster p = testing::TwoLevelCluster().proto();  // 1e12 FLOP/s, no table
  p.mutable_device()->set_memory_read_bytes_per_s(1e9);
  auto price = [&](int64_t cache_bytes) {
    p.mutable_device()->set_cache_bytes(cache_bytes);
    Maybe<Cluster> cluster = Cluster::FromProto(p);
    CHECK(cluster.ok()) << cluster.status().message();
    return PriceTasks(plan, cluster.value(), {}).value();
  };
  auto near = [](double a, double b) { EXPECT_NEAR(a, b, 1e-18 + 1e-9 * b); };
  const std::vector<TaskCost> modelled = price(2000);
  EXPECT_EQ(modelled[0].cold_bytes, 512);
  near(modelled[0].seconds, 1024 / 1e12 + 512 / 1e9);  // FLOPs, then w from memory
  EXPECT_EQ(modelled[1].cold_bytes, 0);
  near(modelled[1].seconds, 2048 / 1e12);
  EXPECT_EQ(modelled[2].cold_bytes, 0);
  near(modelled[2].seconds, 1024 / 1e12);
  const std::vector<TaskCost> tiny = price(1);  // every input cold
  EXPECT_EQ(tiny[1].cold_bytes, 128 + 1024);
  near(tiny[1].seconds, 2048 / 1e12 + 1152 / 1e9);
  const std::vector<TaskCost> plain = price(0);  // no cache model
  EXPECT_EQ(plain[0].cold_bytes, 0);
  near(plain[0].seconds, 1024 / 1e12);
  p.mutable_device()->set_cache_bytes(-1);
  Maybe<Cluster> bad = Cluster::FromProto(p);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("device.cache_bytes=-1"), std::string::npos)
      << bad.status().message();
  p.mutable_device()->set_cache_bytes(2000);
  p.mutable_device()->set_memory_read_bytes_per_s(0);
  bad = Cluster::FromProto(p);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("memory_read_bytes_per_s=0"), std::string::npos)
      << bad.status().message();
}

TEST(PlanTaskCostTest, UnknownOpIsNamed) {
  proto::Plan plan;
  proto::TaskProto* t = AddTask(&plan, proto::TaskProto::COMPUTE, 0, {}, {});
  t->mutable_op_conf()->set_op_type("no_such_op");
  Maybe<std::vector<TaskCost>> costs = PriceTasks(plan, testing::TwoLevelCluster(), {});
  ASSERT_FALSE(costs.ok());
  EXPECT_NE(costs.status().message().find("no_such_op"), std::string::npos);
}

}  // namespace
}  // namespace ofl
