// Cluster: presets, checks, text-format errors with file and line, the
// mesh-to-level mapping, and the collective-time formula with hand-worked
// values for every kind on two levels.
#include "search/cluster.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "search/collective_time.h"

namespace ofl {
namespace {

TEST(ClusterTest, PresetsLoadWithTheirNumbers) {
  EXPECT_EQ(Cluster::PresetNames(),
            (std::vector<std::string>{"a100_8gpu", "h100_8gpu", "p100_nodes", "v100_8gpu"}));
  for (const std::string& name : Cluster::PresetNames()) {
    Maybe<Cluster> c = Cluster::Preset(name);
    ASSERT_TRUE(c.ok()) << c.status().message();
    EXPECT_EQ(c.value().name(), name);
  }
  Cluster v100 = Cluster::Preset("v100_8gpu").value();
  ASSERT_EQ(v100.num_levels(), 2);
  EXPECT_EQ(v100.level(0).size, 8);
  EXPECT_DOUBLE_EQ(v100.level(0).bandwidth_bytes_per_s, 150e9);
  EXPECT_DOUBLE_EQ(v100.level(0).latency_s, 5e-6);
  EXPECT_DOUBLE_EQ(v100.level(1).bandwidth_bytes_per_s, 12.5e9 / 8);
  EXPECT_EQ(v100.num_devices(), 0);
  EXPECT_DOUBLE_EQ(v100.Flops(DataType::kFloat32).value(), 15.7e12);
  EXPECT_DOUBLE_EQ(v100.Flops(DataType::kFloat16).value(), 125e12);
  EXPECT_EQ(v100.memory_bytes(), 32LL << 30);
  Cluster h100 = Cluster::Preset("h100_8gpu").value();
  EXPECT_DOUBLE_EQ(h100.Flops(DataType::kBFloat16).value(), 989e12);
  EXPECT_DOUBLE_EQ(h100.level(0).bandwidth_bytes_per_s, 450e9);
  EXPECT_DOUBLE_EQ(h100.level(1).bandwidth_bytes_per_s, 50e9);
  Cluster a100 = Cluster::Preset("a100_8gpu").value();
  EXPECT_DOUBLE_EQ(a100.Flops(DataType::kBFloat16).value(), 312e12);
  EXPECT_DOUBLE_EQ(a100.level(1).bandwidth_bytes_per_s, 25e9);
  Cluster p100 = Cluster::Preset("p100_nodes").value();
  EXPECT_EQ(p100.num_levels(), 1);
  EXPECT_DOUBLE_EQ(p100.Flops(DataType::kFloat32).value(), 9.3e12);
  EXPECT_EQ(p100.memory_bytes(), 16LL << 30);
}

TEST(ClusterTest, ErrorsNameWhatIsMissing) {
  Maybe<Cluster> missing = Cluster::Preset("tpu_pod");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("tpu_pod"), std::string::npos);
  EXPECT_NE(missing.status().message().find("v100_8gpu"), std::string::npos);
  Maybe<double> flops = Cluster::Preset("p100_nodes").value().Flops(DataType::kBFloat16);
  ASSERT_FALSE(flops.ok());
  EXPECT_EQ(flops.status().message(), "cluster 'p100_nodes' gives no FLOP/s for dtype bfloat16");
  Maybe<Cluster> no_file = Cluster::Load("/nonexistent/cluster.pbtxt");
  ASSERT_FALSE(no_file.ok());
  EXPECT_NE(no_file.status().message().find("/nonexistent/cluster.pbtxt"), std::string::npos);
  Maybe<Cluster> directory = Cluster::Load("/tmp");
  ASSERT_FALSE(directory.ok());
  EXPECT_EQ(directory.status().message(),
            "cluster file /tmp: is a directory, not a Cluster text file");
}

TEST(ClusterTest, TextThatDoesNotParseNamesFileAndLine) {
  std::string text = "name: \"x\"\nlevels {\n  size: 8\n  bandwith_gbps: 100\n}\n";
  Maybe<Cluster> c = Cluster::Parse(text, "my_cluster.pbtxt");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().message().rfind("my_cluster.pbtxt:4:", 0), 0u) << c.status().message();
  EXPECT_NE(c.status().message().find("bandwith_gbps"), std::string::npos);
}

TEST(ClusterTest, ChecksEveryField) {
  auto error = [](const std::string& text) {
    Maybe<Cluster> c = Cluster::Parse(text, "f.pbtxt");
    EXPECT_FALSE(c.ok()) << text;
    return c.ok() ? std::string() : c.status().message();
  };
  std::string device = "device { memory_bytes: 1 }";
  EXPECT_NE(error("name: \"c\" " + device).find("has no link levels"), std::string::npos);
  EXPECT_NE(error("name: \"c\" levels { size: 0 bandwidth_gbps: 1 } levels { size: 0 "
                  "bandwidth_gbps: 1 } " +
                  device)
                .find("outermost level only"),
            std::string::npos);
  EXPECT_NE(error("name: \"c\" levels { size: 8 bandwidth_gbps: 1 } levels { size: 12 "
                  "bandwidth_gbps: 1 } " +
                  device)
                .find("size=12 is not a multiple of the inner level's size 8"),
            std::string::npos);
  EXPECT_NE(error("name: \"c\" levels { name: \"nv\" size: 8 bandwidth_gbps: 0 } " + device)
                .find("f.pbtxt: cluster 'c' level 0 ('nv'): bandwidth_gbps=0 must be > 0"),
            std::string::npos);
  EXPECT_NE(error("name: \"c\" levels { size: 8 bandwidth_gbps: 1 latency_us: -1 } " + device)
                .find("latency_us=-1"),
            std::string::npos);
  EXPECT_NE(error("name: \"c\" levels { size: 8 bandwidth_gbps: 1 }").find("memory_bytes=0"),
            std::string::npos);
  EXPECT_NE(error("name: \"c\" levels { size: 8 bandwidth_gbps: 1 } device { memory_bytes: 1 "
                  "flops { key: \"fp8\" value: 1 } }")
                .find("'fp8', which is not a dtype name"),
            std::string::npos);
}

TEST(ClusterTest, SavesAndLoadsTheSameCluster) {
  Cluster a100 = Cluster::Preset("a100_8gpu").value();
  std::string path = ::testing::TempDir() + "/a100_roundtrip.pbtxt";
  ASSERT_TRUE(a100.Save(path).ok());
  Cluster back = Cluster::Load(path).value();
  EXPECT_EQ(back.ToText(), a100.ToText());
  EXPECT_EQ(back.level(1).bandwidth_bytes_per_s, a100.level(1).bandwidth_bytes_per_s);
  std::remove(path.c_str());
}

TEST(ClusterTest, MeshAxesMapOntoLevels) {
  Cluster v100 = Cluster::Preset("v100_8gpu").value();
  EXPECT_EQ(v100.AxisLevels({128, 8}).value(), (std::vector<int>{1, 0}));
  EXPECT_EQ(v100.AxisLevels({2, 4}).value(), (std::vector<int>{0, 0}));  // one node
  EXPECT_EQ(v100.AxisLevels({16}).value(), (std::vector<int>{1}));       // two nodes
  EXPECT_EQ(v100.AxisLevels({4, 4}).value(), (std::vector<int>{1, 0}));
  EXPECT_EQ(v100.AxisLevels({3, 4}).value(), (std::vector<int>{1, 0}));
  EXPECT_EQ(v100.AxisLevels({2, 3}).value(), (std::vector<int>{1, 1}));  // 3 does not divide 8
  EXPECT_EQ(v100.AxisLevels({8, 1}).value(), (std::vector<int>{0, 0}));
  EXPECT_EQ(Cluster::Preset("p100_nodes").value().AxisLevels({64}).value(), (std::vector<int>{0}));
  // A cluster of 4 nodes of 4 devices.
  Cluster small = Cluster::Parse(
                      "name: \"small\" levels { size: 4 bandwidth_gbps: 100 } levels { size: 16 "
                      "bandwidth_gbps: 10 } device { memory_bytes: 1 }",
                      "small.pbtxt")
                      .value();
  EXPECT_EQ(small.AxisLevels({3, 4}).value(), (std::vector<int>{1, 0}));
  Maybe<std::vector<int>> too_big = small.AxisLevels({4, 8});
  ASSERT_FALSE(too_big.ok());
  EXPECT_NE(too_big.status().message().find("32 devices does not fit its 16"), std::string::npos);
}

// Two levels: an NVLink-like one (100 GB/s, 2 us per step) and a network
// one (10 GB/s, 10 us per step); a group of p = 4 ranks; the busiest rank
// sends 1 GB (1e9 bytes).
TEST(CollectiveTimeTest, HandWorkedValuesForEveryKindOnTwoLevels) {
  LinkLevel fast{"nvlink", 8, 100e9, 2e-6, {}};
  LinkLevel slow{"network", 0, 10e9, 10e-6, {}};
  double bytes = 1e9;
  // all-reduce: 2(p-1) = 6 steps.   fast: 6 * 2us + 1e9/1e11 = 12e-6 + 0.01
  EXPECT_DOUBLE_EQ(CollectiveSeconds(CollectiveKind::kAllReduce, bytes, 4, fast), 0.010012);
  EXPECT_DOUBLE_EQ(CollectiveSeconds(CollectiveKind::kAllReduce, bytes, 4, slow), 0.10006);
  // reduce-scatter, all-gather, all-to-all: p-1 = 3 steps.
  for (CollectiveKind kind :
       {CollectiveKind::kReduceScatter, CollectiveKind::kAllGather, CollectiveKind::kAllToAll}) {
    EXPECT_EQ(CollectiveSteps(kind, 4), 3);
    EXPECT_DOUBLE_EQ(CollectiveSeconds(kind, bytes, 4, fast), 0.010006) << CollectiveKindName(kind);
    EXPECT_DOUBLE_EQ(CollectiveSeconds(kind, bytes, 4, slow), 0.10003) << CollectiveKindName(kind);
  }
  // send/recv: one step.
  EXPECT_DOUBLE_EQ(CollectiveSeconds(CollectiveKind::kSendRecv, bytes, 2, fast), 0.010002);
  EXPECT_DOUBLE_EQ(CollectiveSeconds(CollectiveKind::kSendRecv, bytes, 2, slow), 0.10001);
  // Small messages are latency-bound: all-reduce of 1 KB over 8 ranks on
  // the network: 14 steps * 10 us + 1e3 / 1e10 = 140e-6 + 1e-7.
  EXPECT_DOUBLE_EQ(CollectiveSeconds(CollectiveKind::kAllReduce, 1e3, 8, slow), 140.1e-6);
  EXPECT_EQ(CollectiveSteps(CollectiveKind::kAllReduce, 8), 14);
  // Nothing to move, or one rank: free.
  EXPECT_EQ(CollectiveSeconds(CollectiveKind::kAllGather, 0, 4, slow), 0);
  EXPECT_EQ(CollectiveSeconds(CollectiveKind::kAllReduce, 0, 1, slow), 0);
}

// DESIGN.md section 5's table on a preset: a P -> B all-reduce of a 64 MiB
// gradient over the 8 GPUs of a v100_8gpu node sends 2 * 7/8 * T per rank.
TEST(CollectiveTimeTest, WorksFromAPresetLevel) {
  Cluster v100 = Cluster::Preset("v100_8gpu").value();
  std::vector<int> levels = v100.AxisLevels({4, 8}).value();
  double t = 64.0 * (1 << 20);
  double inner =
      CollectiveSeconds(CollectiveKind::kAllReduce, 2 * 7.0 / 8 * t, 8, v100.level(levels[1]));
  EXPECT_DOUBLE_EQ(inner, 14 * 5e-6 + 2 * 7.0 / 8 * t / 150e9);
  double outer =
      CollectiveSeconds(CollectiveKind::kAllReduce, 2 * 3.0 / 4 * t, 4, v100.level(levels[0]));
  EXPECT_DOUBLE_EQ(outer, 6 * 10e-6 + 2 * 3.0 / 4 * t / 1.5625e9);
}

}  // namespace
}  // namespace ofl
