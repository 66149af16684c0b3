// ComputeTable and the calibrated parts of a Cluster: log-log interpolation
// and extrapolation with values worked out by hand, contention factors,
// per-collective figures in CollectiveSeconds, the errors of bad entries
// (field and value named), and a text round trip of a calibrated Cluster.
#include "search/compute_table.h"

#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>

#include "search/cluster.h"
#include "search/collective_time.h"

namespace ofl {
namespace {

constexpr double kRtol = 1e-12;

Maybe<Cluster> WithDevice(const std::string& device_extra, const std::string& level_extra = "") {
  std::string text = "name: 'cal' levels { name: 'shm' size: 4 bandwidth_gbps: 10 latency_us: 1 " +
                     level_extra + " }\n device { name: 'cpu' flops { key: 'float32' value: 1e9 }" +
                     " memory_bytes: 1000 " + device_extra + " }\n";
  return Cluster::Parse(text, "cal.pbtxt");
}

std::string Entry(const std::string& op, double flops, double seconds,
                  const std::string& dtype = "float32") {
  return "compute { op_type: '" + op + "' dtype: '" + dtype + "' flops: " + std::to_string(flops) +
         " seconds: " + std::to_string(seconds) + " } ";
}

// Three points, given out of order: (1e6, 1e-4), (1e8, 1e-3), (1e9, 1e-2).
// Segment slopes: log(10)/log(100) = 0.5, then log(10)/log(10) = 1.
Cluster ThreePoints() {
  Maybe<Cluster> c =
      WithDevice(Entry("gelu", 1e9, 1e-2) + Entry("gelu", 1e6, 1e-4) + Entry("gelu", 1e8, 1e-3));
  CHECK(c.ok()) << c.status().message();
  return c.value();
}

void ExpectClose(double actual, double expected) {
  EXPECT_NEAR(actual, expected, kRtol * expected + 1e-300) << "expected " << expected;
}

TEST(ComputeTable, InterpolatesLogLogBetweenPoints) {
  const Cluster cluster = ThreePoints();
  const ComputeTable& t = cluster.compute_table();
  ASSERT_FALSE(t.empty());
  // Measured points come back exactly.
  ExpectClose(*t.Seconds("gelu", DataType::kFloat32, 1e6), 1e-4);
  ExpectClose(*t.Seconds("gelu", DataType::kFloat32, 1e8), 1e-3);
  ExpectClose(*t.Seconds("gelu", DataType::kFloat32, 1e9), 1e-2);
  // 1e7 on the first segment: 1e-4 x 10^0.5.
  ExpectClose(*t.Seconds("gelu", DataType::kFloat32, 1e7), 3.1622776601683795e-4);
  // 5e8 on the second (slope 1): 1e-3 x 5.
  ExpectClose(*t.Seconds("gelu", DataType::kFloat32, 5e8), 5e-3);
}

TEST(ComputeTable, ExtrapolatesBySlopeBelowAndByFlopRateAbove) {
  const Cluster cluster = ThreePoints();
  const ComputeTable& t = cluster.compute_table();
  // Below: the first segment's slope 0.5: 1e-4 x (1e4 / 1e6)^0.5 = 1e-5.
  ExpectClose(*t.Seconds("gelu", DataType::kFloat32, 1e4), 1e-5);
  // Above: the largest point's FLOP rate, 1e9 / 1e-2 = 1e11 FLOP/s.
  ExpectClose(*t.Seconds("gelu", DataType::kFloat32, 4e9), 4e-2);
  EXPECT_EQ(*t.Seconds("gelu", DataType::kFloat32, 0), 0.0);
  // Not in the table: no answer (the cost model falls back to FLOP/s).
  EXPECT_FALSE(t.Seconds("matmul", DataType::kFloat32, 1e6).has_value());
  EXPECT_FALSE(t.Seconds("gelu", DataType::kFloat64, 1e6).has_value());
  EXPECT_EQ(t.OpTypes(), std::vector<std::string>{"gelu"});
}

TEST(ComputeTable, ClampsTheSlopeBelowTheSmallestPoint) {
  // One point: its FLOP rate both ways: 2e6 FLOPs in 1e-3 s -> 1e6 in 5e-4.
  Cluster one = WithDevice(Entry("relu", 2e6, 1e-3)).value();
  ExpectClose(*one.compute_table().Seconds("relu", DataType::kFloat32, 1e6), 5e-4);
  ExpectClose(*one.compute_table().Seconds("relu", DataType::kFloat32, 8e6), 4e-3);
  // Slope 2 (1e6 -> 1e-6 s, 1e7 -> 1e-4 s) is clamped to 1 below: 1e5 -> 1e-7.
  Cluster steep = WithDevice(Entry("relu", 1e6, 1e-6) + Entry("relu", 1e7, 1e-4)).value();
  ExpectClose(*steep.compute_table().Seconds("relu", DataType::kFloat32, 1e5), 1e-7);
  // A falling segment (noise) is clamped to 0 below: flat at 2e-4.
  Cluster falling = WithDevice(Entry("relu", 1e6, 2e-4) + Entry("relu", 1e7, 1e-4)).value();
  ExpectClose(*falling.compute_table().Seconds("relu", DataType::kFloat32, 1e5), 2e-4);
}

TEST(ComputeTable, ContentionIsMeasuredInterpolatedAndScaledBeyond) {
  Cluster c = WithDevice(
                  "contention { devices: 4 factor: 2.5 } "
                  "contention { devices: 2 factor: 1.5 }")
                  .value();
  const ComputeTable& t = c.compute_table();
  EXPECT_EQ(t.Contention(1), 1.0);
  ExpectClose(t.Contention(2), 1.5);
  ExpectClose(t.Contention(3), 2.0);  // halfway between 2 and 4
  ExpectClose(t.Contention(4), 2.5);
  ExpectClose(t.Contention(8), 5.0);                            // 2.5 x 8 / 4
  EXPECT_EQ(ThreePoints().compute_table().Contention(4), 1.0);  // none measured
}

TEST(ComputeTable, PresetsHaveNoTable) {
  for (const std::string& name : Cluster::PresetNames()) {
    Cluster c = Cluster::Preset(name).value();
    EXPECT_TRUE(c.compute_table().empty()) << name;
    EXPECT_EQ(c.compute_table().Contention(8), 1.0) << name;
    for (int l = 0; l < c.num_levels(); ++l) EXPECT_TRUE(c.level(l).collectives.empty());
  }
}

TEST(ComputeTable, CollectiveFiguresReplaceTheLevelsForTheirKind) {
  Cluster c =
      WithDevice("", "collectives { kind: 'all_gather' bandwidth_gbps: 2 latency_us: 10 }").value();
  const LinkLevel& level = c.level(0);
  // all_gather on 3 ranks: 2 steps x 10 us + 2e9 bytes / 2e9 B/s.
  ExpectClose(CollectiveSeconds(CollectiveKind::kAllGather, 2e9, 3, level), 1.00002);
  // all_reduce keeps the level's: 4 steps x 1 us + 2e9 / 1e10.
  ExpectClose(CollectiveSeconds(CollectiveKind::kAllReduce, 2e9, 3, level), 0.200004);
}

std::string Shaped(const std::string& op, double flops, double seconds, const std::string& shape) {
  return "compute { op_type: '" + op + "' dtype: 'float32' flops: " + std::to_string(flops) +
         " seconds: " + std::to_string(seconds) + " shape: '" + shape + "' } ";
}

TEST(ComputeTable, AShapeEntryIsItsOwnPriceAndNoCurvePoint) {
  // The curve (1e6, 1e-4), (1e8, 1e-3), (1e9, 1e-2) and a kernel "K" of
  // 1e7 FLOPs measured at 2e-5 s, five times faster than the curve there.
  const Cluster c = WithDevice(Entry("gelu", 1e9, 1e-2) + Entry("gelu", 1e6, 1e-4) +
                               Entry("gelu", 1e8, 1e-3) + Shaped("gelu", 1e7, 2e-5, "K"))
                        .value();
  const ComputeTable& t = c.compute_table();
  EXPECT_EQ(t.num_exact(), 1);
  ExpectClose(*t.ExactSeconds("gelu", DataType::kFloat32, "K"), 2e-5);
  // Another key, dtype or op type has no shape entry.
  EXPECT_FALSE(t.ExactSeconds("gelu", DataType::kFloat32, "L").has_value());
  EXPECT_FALSE(t.ExactSeconds("gelu", DataType::kFloat64, "K").has_value());
  EXPECT_FALSE(t.ExactSeconds("relu", DataType::kFloat32, "K").has_value());
  // The curve at 1e7 is unchanged: 1e-4 x 10^0.5.
  ExpectClose(*t.Seconds("gelu", DataType::kFloat32, 1e7), 3.1622776601683795e-4);
  // A table of shape entries only has no curve: Seconds falls back (nullopt).
  const Cluster only = WithDevice(Shaped("gelu", 1e7, 2e-5, "K")).value();
  EXPECT_FALSE(only.compute_table().empty());
  EXPECT_FALSE(only.compute_table().Seconds("gelu", DataType::kFloat32, 1e7).has_value());
}

void ExpectError(const Maybe<Cluster>& c, const std::string& fragment) {
  ASSERT_FALSE(c.ok()) << "expected an error with " << fragment;
  EXPECT_NE(c.status().message().find(fragment), std::string::npos) << c.status().message();
}

TEST(ComputeTable, BadEntriesNameTheFieldAndValue) {
  ExpectError(WithDevice(Entry("", 1e6, 1e-3)), "device.compute[0]: op_type is empty");
  ExpectError(WithDevice(Entry("gelu", 1e6, 1e-3, "float33")), "dtype='float33'");
  ExpectError(WithDevice(Entry("gelu", 1e6, 1e-3) + Entry("gelu", 0, 1e-3)),
              "device.compute[1] (gelu): flops=0");
  ExpectError(WithDevice(Entry("gelu", 1e6, -1)), "seconds=-1");
  ExpectError(WithDevice(Entry("gelu", 1e6, 1e-3) + Entry("gelu", 1e6, 2e-3)),
              "flops=1e+06 is listed twice");
  ExpectError(WithDevice(Shaped("gelu", 1e6, 1e-3, "K") + Shaped("gelu", 2e6, 2e-3, "K")),
              "device.compute[1] (gelu float32): shape='K' is listed twice");
  ExpectError(WithDevice(Shaped("gelu", 1e6, 0, "K")), "device.compute[0] (gelu): seconds=0");
  ExpectError(WithDevice("contention { devices: 1 factor: 2 }"),
              "device.contention[0]: devices=1 must be >= 2");
  ExpectError(WithDevice("contention { devices: 2 factor: 0 }"), "factor=0 must be > 0");
  ExpectError(WithDevice("contention { devices: 2 factor: 1 } contention { devices: 2 factor: 1 }"),
              "devices=2 is listed twice");
  ExpectError(WithDevice("", "collectives { kind: 'allreduce' bandwidth_gbps: 1 }"),
              "collectives[0]: kind='allreduce' is not one of");
  ExpectError(WithDevice("", "collectives { kind: 'all_gather' bandwidth_gbps: 0 }"),
              "collectives[0] (all_gather): bandwidth_gbps=0 must be > 0");
  ExpectError(WithDevice("", "collectives { kind: 'all_gather' bandwidth_gbps: 1 latency_us: -1 }"),
              "latency_us=-1 must be >= 0");
  ExpectError(WithDevice("",
                         "collectives { kind: 'all_to_all' bandwidth_gbps: 1 } "
                         "collectives { kind: 'all_to_all' bandwidth_gbps: 2 }"),
              "kind='all_to_all' is listed twice");
}

TEST(ComputeTable, ACalibratedClusterFileRoundTrips) {
  Cluster c = WithDevice(Entry("gelu", 1e9, 1e-2) + Entry("gelu", 1e6, 1e-4) +
                             Entry("matmul", 1e8, 2e-3) + "contention { devices: 2 factor: 1.25 }",
                         "collectives { kind: 'reduce_scatter' bandwidth_gbps: 3 latency_us: 7 }")
                  .value();
  const std::string path =
      ::testing::TempDir() + "/compute_table_" + std::to_string(getpid()) + ".pbtxt";
  ASSERT_TRUE(c.Save(path).ok());
  Maybe<Cluster> loaded = Cluster::Load(path);
  std::remove(path.c_str());
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  EXPECT_TRUE(
      google::protobuf::util::MessageDifferencer::Equals(loaded.value().proto(), c.proto()));
  const Cluster& l = loaded.value();
  // Two gelu points: slope log(100) / log(1000) = 2/3, so 1e7 takes 1e-4 x 10^(2/3).
  ExpectClose(*l.compute_table().Seconds("gelu", DataType::kFloat32, 1e7), 4.641588833612779e-4);
  ExpectClose(*l.compute_table().Seconds("matmul", DataType::kFloat32, 5e7), 1e-3);
  ExpectClose(l.compute_table().Contention(2), 1.25);
  ExpectClose(l.level(0).collectives.at("reduce_scatter").bandwidth_bytes_per_s, 3e9);
  ExpectClose(l.level(0).collectives.at("reduce_scatter").latency_s, 7e-6);
}

}  // namespace
}  // namespace ofl
