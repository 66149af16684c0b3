// libFuzzer target: a Cluster file as a user's load reads it. Text goes
// through Cluster::Parse (what Cluster::Load and --cluster FILE call), binary
// through Cluster::FromProto; a cluster that loads must print, parse back to
// the same cluster, and answer AxisLevels, Flops and every collective's
// seconds (CollectiveSeconds, measured points included) without crashing.
#include <cstdint>

#include "fuzz/fuzz_input.h"
#include "search/cluster.h"
#include "search/collective_time.h"

namespace {

void Use(const ofl::Cluster& cluster) {
  ofl::Maybe<ofl::Cluster> back = ofl::Cluster::Parse(cluster.ToText(), "round-trip");
  if (!back.ok() || back.value().ToText() != cluster.ToText()) __builtin_trap();
  for (const auto& mesh : {std::vector<int64_t>{2}, std::vector<int64_t>{2, 4},
                           std::vector<int64_t>{cluster.num_devices()}}) {
    (void)cluster.AxisLevels(mesh);
  }
  (void)cluster.Flops(ofl::DataType::kFloat32);
  // Every level prices every collective (its measured points where a group
  // size has them) without a CHECK failure.
  for (int l = 0; l < cluster.num_levels(); ++l) {
    for (ofl::CollectiveKind kind :
         {ofl::CollectiveKind::kAllReduce, ofl::CollectiveKind::kReduceScatter,
          ofl::CollectiveKind::kAllGather, ofl::CollectiveKind::kAllToAll,
          ofl::CollectiveKind::kSendRecv}) {
      for (int64_t group : {1, 2, 4, 8}) {
        for (double bytes : {0.0, 1.0, 4096.0, 1e6, 1e12}) {
          (void)ofl::CollectiveSeconds(kind, bytes, group, cluster.level(l));
        }
      }
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ofl::Maybe<ofl::Cluster> text =
      ofl::Cluster::Parse(std::string(reinterpret_cast<const char*>(data), size), "fuzz.pbtxt");
  if (text.ok()) Use(text.value());
  ofl::proto::Cluster binary;
  if (binary.ParseFromArray(data, static_cast<int>(size))) {
    ofl::Maybe<ofl::Cluster> checked = ofl::Cluster::FromProto(binary);
    if (checked.ok()) Use(checked.value());
  }
  return 0;
}
