// ComputeTable: a Cluster's measured kernel times (cluster.proto
// ComputeEntry, Contention), read as curves of seconds against FLOPs per
// (op type, dtype), and the slow-down of devices that share cores. No op
// knowledge: op types are plain keys. An immutable value once built;
// thread-safe to share.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "oneflow_lite/core/data_type.h"
#include "oneflow_lite/core/proto/cluster.pb.h"
#include "oneflow_lite/core/status.h"

// ComputeTable: a Cluster's measured kernel times (cluster.proto
// ComputeEntry, Contention), read as curves of seconds against FLOPs per
// (op type, dtype), and the slow-down of devices that share cores.
//   Seconds(op, dtype, f): 0 for f <= 0; with one measured point (f0, t0),
//   t0 x f / f0 (that point's FLOP rate); with several, sorted by FLOPs,
//   log-log linear between the two points around f; below the smallest,
//   the first segment's log-log slope clamped to [0, 1] (a kernel is never
//   faster for more work, nor slower than linear); above the largest, that
//   point's FLOP rate (slope 1). std::nullopt when (op, dtype) has no entry:
//   the caller falls back to the FLOP/s figure.
//   Contention(k): 1 for k <= 1 or no entries; the measured factor at k;
//   linear in k between measured counts (1 -> 1 implied); above the largest
//   measured count m, factor(m) x k / m (the cores are shared k ways).
// An immutable value once built; thread-safe to share. No op knowledge: op
// types are plain keys (search/ knows no op).

namespace ofl {

struct ComputePoint {
  double flops = 0;
  double seconds = 0;
};

// The rule above on `points` sorted by FLOPs, distinct and > 0 (CHECKed).
double InterpolateSeconds(const std::vector<ComputePoint>& points, double flops);

class ComputeTable {
 public:
  // Checks device.compute and device.contention of cluster `cluster_name`:
  // op_type non-empty, dtype a dtype name, flops and seconds > 0 and finite,
  // no two entries of one (op_type, dtype) at the same flops; contention
  // devices >= 2, each once, factor > 0. Errors name the cluster, the entry
  // index, the field and its value.
  static Maybe<ComputeTable> FromProto(const std::string& cluster_name,
                                       const proto::DeviceSpec& device);

  bool empty() const { return curves_.empty(); }
  bool Has(const std::string& op_type, DataType dtype) const;
  std::optional<double> Seconds(const std::string& op_type, DataType dtype, double flops) const;
  double Contention(int64_t devices) const;
  // Op types with at least one entry, sorted.
  std::vector<std::string> OpTypes() const;

 private:
  std::map<std::pair<std::string, DataType>, std::vector<ComputePoint>> curves_;
  std::vector<std::pair<int64_t, double>> contention_;  // by devices
};

}  // namespace ofl
