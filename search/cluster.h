// Cluster: the machine a plan is costed for (DESIGN.md sections 5, 6): a
// hierarchy of link levels, innermost first (devices per group, bandwidth per
// device, latency per collective step), and one device kind (FLOP/s per dtype,
// memory). Its file form is the proto::Cluster text format; presets are
// committed as search/clusters/<name>.pbtxt and compiled into the library, so
// Preset() needs no path.
//
// A Cluster is an immutable value once built (every constructor checks it);
// thread-safe to share.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "oneflow_lite/core/data_type.h"
#include "oneflow_lite/core/proto/cluster.pb.h"
#include "oneflow_lite/core/status.h"
#include "search/compute_table.h"

// A mesh such as [128, 8] (outer axis first, as Placement writes it) runs each
// axis on the innermost level whose groups hold all of that axis's ranks
// (AxisLevels). A calibrated cluster (api/calibrate.h) may add per-collective
// latency and bandwidth on a level (and a table of their measured times by
// message size), a table of measured kernel times and contention factors
// (compute_table()); the presets have none, and without them every price is
// the FLOP/s and level figures'. Units inside: bytes, seconds,
// FLOP/s.

namespace ofl {

// One measured collective (cluster.proto CollectivePoint): the busiest rank
// sent `bytes` in `seconds`.
struct CollectiveSample {
  double bytes = 0;
  double seconds = 0;
};

// A collective's own figures on a level (cluster.proto CollectiveFigure).
struct CollectiveFigure {
  double bandwidth_bytes_per_s = 0;
  double latency_s = 0;
  // Measured times by the group size they ran on: each two or more samples,
  // sorted by bytes, bytes distinct (search/collective_time.h prices from them).
  std::map<int64_t, std::vector<CollectiveSample>> points;
};

// One link level in SI units.
struct LinkLevel {
  std::string name;
  int64_t size = 0;                  // devices per group; 0 = no limit (outermost only)
  double bandwidth_bytes_per_s = 0;  // per device, every device of a group sending at once
  double latency_s = 0;              // per collective step
  // By collective kind name ("all_reduce", ...): figures that replace the
  // two above for that kind (search/collective_time.h FigureOf).
  std::map<std::string, CollectiveFigure> collectives;
};

class Cluster {
 public:
  // Checks the proto: a name, at least one level; sizes >= 1 and each a
  // multiple of the inner level's (0 only on the outermost); bandwidth > 0;
  // latency >= 0; memory > 0; flops keyed by known dtype names and > 0;
  // collective figures of known kinds, each once, bandwidth > 0, latency
  // >= 0, points with bytes and seconds > 0 and finite, group_size >= 2,
  // two or more per group size, no bytes twice in one group size (sorted
  // here; the file keeps its order); the compute table and contention as
  // ComputeTable::FromProto checks. Errors name the cluster, the field and
  // the value.
  static Maybe<Cluster> FromProto(const proto::Cluster& cluster);
  // Parses the text format; `file_name` appears in errors as
  // "file:line:column: message" for text that does not parse.
  static Maybe<Cluster> Parse(const std::string& text, const std::string& file_name);
  static Maybe<Cluster> Load(const std::string& path);
  // A committed preset by name (see PresetNames()).
  static Maybe<Cluster> Preset(const std::string& name);
  static std::vector<std::string> PresetNames();

  Status Save(const std::string& path) const;  // text format
  std::string ToText() const;
  const proto::Cluster& proto() const { return proto_; }

  const std::string& name() const { return proto_.name(); }
  int num_levels() const { return static_cast<int>(levels_.size()); }
  const LinkLevel& level(int index) const;  // CHECKs the index
  int64_t memory_bytes() const { return proto_.device().memory_bytes(); }
  // The cache model (cluster.proto DeviceSpec): bytes per device (0: none)
  // and the bytes per second a device reads from memory.
  int64_t cache_bytes() const { return proto_.device().cache_bytes(); }
  double memory_read_bytes_per_s() const { return proto_.device().memory_read_bytes_per_s(); }
  // 0 when the outermost level has no limit.
  int64_t num_devices() const { return levels_.back().size; }
  // FLOP/s of one device for `dtype`; an error naming both when the
  // cluster gives no figure for it.
  Maybe<double> Flops(DataType dtype) const;
  // Measured kernel times and contention (empty for the presets).
  const ComputeTable& compute_table() const { return compute_table_; }

  // For each axis of `hierarchy` (outer first, ranks numbered row-major so
  // the last axis varies fastest, devices numbered group by group), the
  // index of the level its groups run on: the innermost level whose size is
  // a multiple of the axis's span (its size times the sizes of the axes
  // inside it). Axes of size 1 get level 0. Errors when the mesh needs more
  // devices than the cluster has.
  Maybe<std::vector<int>> AxisLevels(const std::vector<int64_t>& hierarchy) const;

 private:
  Cluster() = default;
  proto::Cluster proto_;
  std::vector<LinkLevel> levels_;
  ComputeTable compute_table_;
};

}  // namespace ofl
