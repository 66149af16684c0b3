// Calibration smoke test with tiny sizes: the written file parses back with
// Cluster::Load, its figures are the measured ones, positive and finite, and
// bad options are errors that name the option; with kernel probes the
// compute table covers every op with FLOPs at the probes' sizes and is
// monotone, contention is measured, every collective gets its own figures;
// and the pooling of nearby sizes and the contention ratio, by hand.
#include "oneflow_lite/api/calibrate.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>

#include "oneflow_lite/api/calibrate_kernels.h"
#include "oneflow_lite/api/calibrate_runs.h"
#include "oneflow_lite/api/session.h"

namespace ofl {
namespace {

CalibrationOptions Tiny() {
  CalibrationOptions o;
  o.devices = 3;
  o.num_threads = 1;
  o.memcpy_bytes = 1 << 16;
  o.matmul_size = 32;
  o.allreduce_bytes = 1 << 16;
  o.reps = 2;
  o.name = "tiny";
  return o;
}

TEST(Calibrate, WritesAClusterThatLoads) {
  auto c = Calibrate(Tiny());
  ASSERT_TRUE(c.ok()) << c.status().message();
  const std::string path =
      ::testing::TempDir() + "/calibrate_" + std::to_string(getpid()) + ".pbtxt";
  ASSERT_TRUE(c.value().Save(path).ok());
  auto loaded = Cluster::Load(path);
  std::remove(path.c_str());
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  const Cluster& cluster = loaded.value();
  EXPECT_EQ(cluster.name(), "tiny");
  ASSERT_EQ(cluster.num_levels(), 1);
  EXPECT_EQ(cluster.level(0).size, 3);
  for (double v : {cluster.level(0).bandwidth_bytes_per_s, cluster.level(0).latency_s,
                   cluster.Flops(DataType::kFloat32).value(),
                   static_cast<double>(cluster.memory_bytes()), c.value().memcpy_gbps}) {
    EXPECT_TRUE(std::isfinite(v) && v > 0) << v;
  }
  // The file holds the measured figures (text round trip within 1e-6).
  EXPECT_NEAR(cluster.level(0).bandwidth_bytes_per_s / c.value().bandwidth_bytes_per_s, 1, 1e-6);
  EXPECT_NEAR(cluster.Flops(DataType::kFloat32).value() / c.value().matmul_flops, 1, 1e-6);
  // A 3-rank all-reduce of 2^14 floats: each rank sends 2 * (3-1)/3 of the
  // 65536 bytes, within a rank's rounding of the balanced parts.
  EXPECT_NEAR(c.value().allreduce_bytes_sent, 2.0 * 2 / 3 * 65536, 8);
  // The comment block says how and when.
  EXPECT_NE(c.value().ToText().find("measured on this machine"), std::string::npos);
  EXPECT_NE(c.value().ToText().find(c.value().measured_at), std::string::npos);
}

// x [rows, 32] @ w [32, 16] -> relu -> mean, trained by SGD.
Program ProbeProgram(int64_t rows) {
  Program p;
  CHECK(p.graph().AddInput("x", {Shape{rows, 32}, DataType::kFloat32}).ok());
  CHECK(p.graph().AddVariable("w", Tensor::Full({32, 16}, DataType::kFloat32, 0.1), true).ok());
  std::string y = p.graph().AddOp("matmul", {"x", "w"}, {}, "fc").value()[0];
  y = p.graph().AddOp("relu", {y}, {}, "act").value()[0];
  std::string loss = p.graph().AddOp("reduce_mean", {y}, {}, "mean").value()[0];
  OptimizerConf sgd;
  sgd.kind = "sgd";
  CHECK(p.Minimize(loss, sgd).ok());
  return p;
}

TEST(Calibrate, KernelTableAndContentionFromProbes) {
  const Program small = ProbeProgram(8), large = ProbeProgram(64);
  CalibrationOptions o = Tiny();
  o.kernel_probes = {&small.graph(), &large.graph()};
  o.contention_devices = 2;
  auto c = Calibrate(o);
  ASSERT_TRUE(c.ok()) << c.status().message();
  const Cluster& cluster = *c.value().cluster;
  const proto::DeviceSpec& device = cluster.proto().device();
  ASSERT_EQ(c.value().compute_entries, device.compute_size());
  // Every op with FLOPs, forward and backward, at both sizes: matmul's
  // FLOPs 2 x 8 x 16 x 32 = 8192 and 65536.
  const std::vector<std::string> types = cluster.compute_table().OpTypes();
  for (const char* t : {"matmul", "relu"}) {
    EXPECT_NE(std::find(types.begin(), types.end(), t), types.end()) << t;
  }
  std::map<std::string, std::vector<std::pair<double, double>>> curves;
  for (const proto::ComputeEntry& e : device.compute()) {
    EXPECT_TRUE(std::isfinite(e.seconds()) && e.seconds() > 0 && e.seconds() < 10) << e.op_type();
    EXPECT_EQ(e.dtype(), "float32");
    curves[e.op_type()].push_back({e.flops(), e.seconds()});
  }
  std::vector<double> matmul_flops;
  for (const auto& [f, s] : curves["matmul"]) matmul_flops.push_back(f);
  std::sort(matmul_flops.begin(), matmul_flops.end());
  EXPECT_EQ(matmul_flops.front(), 8192);
  EXPECT_EQ(matmul_flops.back(), 65536);
  // Monotone-plausible: more FLOPs never take less time within an op type.
  for (auto& [type, curve] : curves) {
    std::sort(curve.begin(), curve.end());
    for (size_t i = 1; i < curve.size(); ++i) EXPECT_GE(curve[i].second, curve[i - 1].second);
  }
  ASSERT_EQ(device.contention_size(), 1);
  EXPECT_EQ(device.contention(0).devices(), 2);
  EXPECT_TRUE(std::isfinite(device.contention(0).factor()) && device.contention(0).factor() > 0);
  // Every in-process collective has its own figures on the level.
  EXPECT_EQ(cluster.level(0).collectives.size(), 4u);
  for (const auto& [kind, figure] : cluster.level(0).collectives) {
    EXPECT_TRUE(figure.bandwidth_bytes_per_s > 0 && figure.latency_s > 0) << kind;
  }
  EXPECT_NE(c.value().ToText().find("no correction factor"), std::string::npos);
  // The text form parses back with the same table.
  auto parsed = Cluster::Parse(c.value().ToText(), "calibrated.pbtxt");
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  EXPECT_EQ(parsed.value().proto().device().compute_size(), device.compute_size());
}

TEST(Calibrate, ComputeEntriesPoolNearbySizesAndStayMonotone) {
  // By hand: 100 and 105 FLOPs are one point (median 102.5 FLOPs, median
  // 2.5 s); 1000 FLOPs at 1 s is slower-than-next noise: pooled with the
  // point before (weights 2 and 1: (2.5 x 2 + 1) / 3 = 2 s); 1e4 at 5 s stays.
  std::vector<KernelTime> times = {{"a", "gelu", DataType::kFloat32, 100, 2},
                                   {"b", "gelu", DataType::kFloat32, 105, 3},
                                   {"c", "gelu", DataType::kFloat32, 1000, 1},
                                   {"d", "gelu", DataType::kFloat32, 10000, 5}};
  std::vector<proto::ComputeEntry> entries = ToComputeEntries(times);
  ASSERT_EQ(entries.size(), 3u);
  EXPECT_DOUBLE_EQ(entries[0].flops(), 102.5);
  EXPECT_DOUBLE_EQ(entries[0].seconds(), 2.0);
  EXPECT_DOUBLE_EQ(entries[1].flops(), 1000);
  EXPECT_DOUBLE_EQ(entries[1].seconds(), 2.0);
  EXPECT_DOUBLE_EQ(entries[2].flops(), 10000);
  EXPECT_DOUBLE_EQ(entries[2].seconds(), 5.0);
  // Contention: the sums of the shared ops' times, at once over alone.
  EXPECT_DOUBLE_EQ(SlowdownRatio({times[0], times[1]}, {{"a", "gelu", DataType::kFloat32, 100, 3},
                                                        {"b", "gelu", DataType::kFloat32, 105, 7},
                                                        {"z", "gelu", DataType::kFloat32, 1, 9}}),
                   2.0);
}

// Hand-worked: an all-reduce of 2 ranks (2 steps) at 10 us per step and
// 1e9 B/s, its two smallest sizes sped up as a shaper's burst speeds them.
TEST(Calibrate, FitThroughSizesTakesTheBandwidthFromTheLargeOnes) {
  auto at = [](double sent, double seconds) { return CollectivePoint{0, sent, seconds}; };
  const std::vector<CollectivePoint> exact = {at(1e3, 21e-6), at(1e4, 30e-6), at(1e5, 120e-6),
                                              at(1e6, 1020e-6)};
  CollectiveFigure f = FitCollectivePoints(CollectiveKind::kAllReduce, 2, exact);
  EXPECT_NEAR(f.bandwidth_bytes_per_s, 1e9, 1e-3);
  EXPECT_NEAR(f.latency_s, 10e-6, 1e-12);
  // Burst: 1e3 in 5 us, 1e4 in 12 us. Bandwidth unchanged; latency the
  // least of (5 - 1, 12 - 10) us over 2 steps.
  const std::vector<CollectivePoint> burst = {at(1e6, 1020e-6), at(1e4, 12e-6), at(1e3, 5e-6),
                                              at(1e5, 120e-6)};
  f = FitCollectivePoints(CollectiveKind::kAllReduce, 2, burst);
  EXPECT_NEAR(f.bandwidth_bytes_per_s, 1e9, 1e-3);
  EXPECT_NEAR(f.latency_s, 1e-6, 1e-12);
  // A slow smallest call (a descheduled process): the second size decides.
  f = FitCollectivePoints(CollectiveKind::kAllReduce, 2,
                          {at(1e3, 2000e-6), at(1e4, 30e-6), at(1e5, 120e-6), at(1e6, 1020e-6)});
  EXPECT_NEAR(f.latency_s, 10e-6, 1e-12);
  // Times flat in the size: the largest point's own bandwidth (2e3 B in 1 ms);
  // latency (1 ms - 1e3 B / 2e6 B/s) over 2 steps = 0.25 ms.
  f = FitCollectivePoints(CollectiveKind::kAllGather, 3, {at(1e3, 1e-3), at(2e3, 1e-3)});
  EXPECT_NEAR(f.bandwidth_bytes_per_s, 2e6, 1e-6);
  EXPECT_NEAR(f.latency_s, 0.25e-3, 1e-12);
}

// Hand-worked: each size's seconds become the least of its own and every
// larger size's.
TEST(Calibrate, MonotoneInSizeBoundsEachSizeByTheLargerOnes) {
  auto at = [](double sent, double seconds) { return CollectivePoint{7, sent, seconds}; };
  auto seconds = [](const std::vector<CollectivePoint>& points) {
    std::vector<double> out;
    for (const CollectivePoint& p : points) out.push_back(p.seconds);
    return out;
  };
  // Already rising: unchanged, and sorted by size on the way.
  std::vector<CollectivePoint> fit = MonotoneInSize({at(30, 3), at(10, 1), at(20, 2)});
  EXPECT_EQ(seconds(fit), (std::vector<double>{1, 2, 3}));
  EXPECT_EQ(fit[0].bytes_sent, 10);
  EXPECT_EQ(fit[2].buffer_bytes, 7);
  // 1, 3, 2, 4 -> 1, 2, 2, 4.
  fit = MonotoneInSize({at(1, 1), at(2, 3), at(3, 2), at(4, 4)});
  EXPECT_EQ(seconds(fit), (std::vector<double>{1, 2, 2, 4}));
  // A 4 ms scheduler tick on the two smallest sizes, clean larger ones:
  // 4, 4, 0.2, 5 -> 0.2, 0.2, 0.2, 5 (the largest keeps its own).
  fit = MonotoneInSize({at(8, 4), at(4096, 4), at(16384, 0.2), at(65536, 5)});
  EXPECT_EQ(seconds(fit), (std::vector<double>{0.2, 0.2, 0.2, 5}));
  // One point: unchanged.
  EXPECT_EQ(seconds(MonotoneInSize({at(8, 9)})), (std::vector<double>{9}));
}

// Levels measured elsewhere go outside the in-process level, or replace it.
TEST(Calibrate, LevelsMeasuredElsewhereMakeTheHierarchy) {
  CalibrationOptions o = Tiny();
  o.per_collective = false;
  o.devices = 2;
  proto::LinkLevel node, network;
  node.set_name("node");
  node.set_size(4);
  node.set_bandwidth_gbps(2.0);
  node.set_latency_us(30);
  network.set_name("network");
  network.set_size(8);
  network.set_bandwidth_gbps(0.1);
  network.set_latency_us(80);
  o.levels = {node, network};
  o.levels_source = "levels: by hand\nsecond line";
  auto c = Calibrate(o);
  ASSERT_TRUE(c.ok()) << c.status().message();
  const Cluster& cluster = *c.value().cluster;
  ASSERT_EQ(cluster.num_levels(), 3);
  EXPECT_EQ(cluster.level(0).name, "shared_memory");
  EXPECT_EQ(cluster.level(1).name, "node");
  EXPECT_EQ(cluster.level(2).size, 8);
  EXPECT_DOUBLE_EQ(cluster.level(2).bandwidth_bytes_per_s, 0.1e9);
  EXPECT_NE(c.value().ToText().find("# levels: by hand\n# second line\n"), std::string::npos);
  o.inprocess_level = false;
  c = Calibrate(o);
  ASSERT_TRUE(c.ok()) << c.status().message();
  ASSERT_EQ(c.value().cluster->num_levels(), 2);
  EXPECT_EQ(c.value().cluster->level(0).name, "node");
  o.collectives = {proto::CollectiveFigure()};
  EXPECT_NE(Calibrate(o).status().message().find("exclusive"), std::string::npos);
}

TEST(Calibrate, BadOptionsNameTheOption) {
  CalibrationOptions o = Tiny();
  o.devices = 1;
  auto c = Calibrate(o);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("devices=1"), std::string::npos);
  o = Tiny();
  o.reps = 0;
  c = Calibrate(o);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("reps=0"), std::string::npos);
  o = Tiny();
  o.contention_devices = 1;
  c = Calibrate(o);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("contention_devices=1"), std::string::npos);
}

}  // namespace
}  // namespace ofl
