// Calibration smoke test with tiny sizes: the written file parses back with
// Cluster::Load, its figures are the measured ones, positive and finite, and
// bad options are errors that name the option.
#include "oneflow_lite/api/calibrate.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <string>

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
  const std::string path = ::testing::TempDir() + "/calibrate_" + std::to_string(getpid()) +
                           ".pbtxt";
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
}

}  // namespace
}  // namespace ofl
