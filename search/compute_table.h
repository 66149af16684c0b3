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
#include <tuple>
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
//   ExactSeconds(op, dtype, shape): an entry with a shape key (one kernel
//   at its exact local shapes and attributes, measured alone) gives its own
//   seconds; std::nullopt when there is none (the caller falls back to the
//   curve). Shape entries are no curve points.
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
  // no two curve entries of one (op_type, dtype) at the same flops, no two
  // shape entries of one (op_type, dtype, shape); contention
  // devices >= 2, each once, factor > 0. Errors name the cluster, the entry
  // index, the field and its value.
  static Maybe<ComputeTable> FromProto(const std::string& cluster_name,
                                       const proto::DeviceSpec& device);

  bool empty() const { return curves_.empty() && exact_.empty(); }
  bool Has(const std::string& op_type, DataType dtype) const;
  std::optional<double> Seconds(const std::string& op_type, DataType dtype, double flops) const;
  std::optional<double> ExactSeconds(const std::string& op_type, DataType dtype,
                                     const std::string& shape) const;
  int64_t num_exact() const { return static_cast<int64_t>(exact_.size()); }
  double Contention(int64_t devices) const;
  // Op types with at least one curve entry, sorted.
  std::vector<std::string> OpTypes() const;

 private:
  std::map<std::pair<std::string, DataType>, std::vector<ComputePoint>> curves_;
  std::map<std::tuple<std::string, DataType, std::string>, double> exact_;  // by shape key
  std::vector<std::pair<int64_t, double>> contention_;                      // by devices
};

}  // namespace ofl
