// Kernels timed at the exact shapes of a plan (api/calibrate_shapes.h): one
// entry per distinct (op type, shape key), keyed as PriceTasks keys them,
// FLOPs worked out by hand; ops without FLOPs are not timed; the entries
// replace those of the same key in a Cluster, and an entry without a shape
// is an error that names it.
#include "oneflow_lite/api/calibrate_shapes.h"

#include <gtest/gtest.h>

#include <set>

#include "graph/plan_task_cost.h"
#include "tests/cpp/graph/plan_makers.h"

namespace ofl {
namespace {

int64_t AddRegister(proto::Plan* plan, const std::vector<int64_t>& dims) {
  return testing::AddRegister(plan, 0, dims);
}

void AddCompute(proto::Plan* plan, const std::string& type, const std::vector<int64_t>& in,
                const std::vector<int64_t>& out) {
  testing::AddCompute(plan, type, 0, in, out);
}

// Two matmuls of one shape ([4, 8] x [8, 16]), one of another ([4, 8] x
// [8, 32]), and a reshape (no FLOPs: not timed).
proto::Plan ThreeKernels() {
  proto::Plan plan;
  const int64_t x = AddRegister(&plan, {4, 8}), w = AddRegister(&plan, {8, 16});
  const int64_t w2 = AddRegister(&plan, {8, 32}), y = AddRegister(&plan, {4, 16});
  const int64_t y2 = AddRegister(&plan, {4, 32}), flat = AddRegister(&plan, {64});
  AddCompute(&plan, "matmul", {x, w}, {y});
  AddCompute(&plan, "matmul", {x, w}, {y});
  AddCompute(&plan, "matmul", {x, w2}, {y2});
  AddCompute(&plan, "reshape", {y}, {flat});
  proto::AttrValue shape;
  shape.mutable_ints()->add_values(64);
  (*plan.mutable_tasks(3)->mutable_op_conf()->mutable_attrs())["shape"] = shape;
  plan.set_num_ranks(1);
  return plan;
}

TEST(CalibrateShapes, OneEntryPerDistinctKernelWithFlops) {
  const proto::Plan plan = ThreeKernels();
  KernelTimingOptions o;
  o.reps = 2;
  Maybe<ShapeTimes> times = TimePlanKernels({plan, plan}, o);
  ASSERT_TRUE(times.ok()) << times.status().message();
  EXPECT_TRUE(times.value().skipped.empty());
  // The reshape has no FLOPs: two matmul entries, 2 x 4 x 8 x 16 and 2 x 4 x 8 x 32 FLOPs.
  ASSERT_EQ(times.value().entries.size(), 2u);
  std::set<std::string> keys;
  for (const proto::ComputeEntry& e : times.value().entries) {
    EXPECT_EQ(e.op_type(), "matmul");
    EXPECT_EQ(e.dtype(), "float32");
    EXPECT_GT(e.seconds(), 0);
    const bool narrow = e.shape().rfind("float32(4, 8) float32(8, 16) ", 0) == 0;
    EXPECT_EQ(e.flops(), narrow ? 1024.0 : 2048.0) << e.shape();
    keys.insert(e.shape());
  }
  EXPECT_EQ(keys, (std::set<std::string>{KernelShapeKey(plan, plan.tasks(0)).value(),
                                         KernelShapeKey(plan, plan.tasks(2)).value()}));
}

Cluster Base() {
  return Cluster::Parse(
             "name: 'c' levels { name: 'shm' size: 4 bandwidth_gbps: 10 latency_us: 1 }\n"
             "device { name: 'cpu' flops { key: 'float32' value: 1e9 } memory_bytes: 1000 "
             "compute { op_type: 'matmul' dtype: 'float32' flops: 100 seconds: 1 shape: 'K' } "
             "compute { op_type: 'matmul' dtype: 'float32' flops: 100 seconds: 3 shape: 'L' } }",
             "c.pbtxt")
      .value();
}

proto::ComputeEntry Shaped(const std::string& shape, double seconds) {
  proto::ComputeEntry e;
  e.set_op_type("matmul");
  e.set_dtype("float32");
  e.set_flops(100);
  e.set_seconds(seconds);
  e.set_shape(shape);
  return e;
}

TEST(CalibrateShapes, EntriesReplaceTheirKey) {
  Maybe<Cluster> c = AddShapeEntries(Base(), {Shaped("K", 2), Shaped("M", 4)});
  ASSERT_TRUE(c.ok()) << c.status().message();
  const ComputeTable& t = c.value().compute_table();
  EXPECT_EQ(t.num_exact(), 3);
  EXPECT_EQ(*t.ExactSeconds("matmul", DataType::kFloat32, "K"), 2.0);
  EXPECT_EQ(*t.ExactSeconds("matmul", DataType::kFloat32, "L"), 3.0);
  EXPECT_EQ(*t.ExactSeconds("matmul", DataType::kFloat32, "M"), 4.0);
}

TEST(CalibrateShapes, ACacheModelIsSetAndChecked) {
  EXPECT_EQ(Base().cache_bytes(), 0);
  Maybe<Cluster> c = WithCacheModel(Base(), {4096, 5e9});
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c.value().cache_bytes(), 4096);
  EXPECT_EQ(c.value().memory_read_bytes_per_s(), 5e9);
  for (const CacheModel& bad : {CacheModel{0, 5e9}, CacheModel{4096, 0}, CacheModel{-1, 5e9}}) {
    c = WithCacheModel(Base(), bad);
    ASSERT_FALSE(c.ok());
    EXPECT_NE(c.status().message().find("must be > 0"), std::string::npos) << c.status().message();
  }
  const CacheModel host = MeasureCacheModel();
  EXPECT_GT(host.cache_bytes, 0);
  EXPECT_GT(host.memory_read_bytes_per_s, 1e8);  // any memory reads 100 MB/s
}

TEST(CalibrateShapes, BadEntriesAreNamed) {
  Maybe<Cluster> c = AddShapeEntries(Base(), {Shaped("", 2)});
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("entries[0]"), std::string::npos) << c.status().message();
  c = AddShapeEntries(Base(), {Shaped("N", -1)});
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("seconds=-1"), std::string::npos) << c.status().message();
}

}  // namespace
}  // namespace ofl
