// Cluster: checking, text format, presets and mesh-to-level mapping.
#include "search/cluster.h"

#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

namespace ofl {
namespace internal {
// Defined in the generated cluster_presets.cpp (search/CMakeLists.txt): the
// text of every search/clusters/*.pbtxt, by file stem.
struct ClusterPresetText {
  const char* name;
  const char* text;
};
extern const ClusterPresetText kClusterPresets[];
extern const int kNumClusterPresets;
}  // namespace internal

namespace {

// Collects the first text-format error as "file:line:column: message".
class FirstErrorCollector : public google::protobuf::io::ErrorCollector {
 public:
  explicit FirstErrorCollector(std::string file_name) : file_name_(std::move(file_name)) {}
  void AddError(int line, google::protobuf::io::ColumnNumber column,
                const std::string& message) override {
    if (!first_.empty()) return;
    first_ = StrCat(file_name_, ":", line + 1, ":", column + 1, ": ", message);
  }
  const std::string& first() const { return first_; }

 private:
  std::string file_name_;
  std::string first_;
};

bool Positive(double v) { return std::isfinite(v) && v > 0; }

// A collective's measured points: each valid, two or more per group size,
// no bytes twice in one group size. `at` names the level and the kind.
Status CheckPoints(const proto::CollectiveFigure& c, const std::string& at) {
  std::map<int64_t, std::set<double>> bytes_by_group;
  for (int j = 0; j < c.points_size(); ++j) {
    const proto::CollectivePoint& p = c.points(j);
    const std::string where = StrCat(at, " points[", j, "]");
    OFL_ENSURE(Positive(p.bytes()), where, ": bytes=", p.bytes(), " must be > 0 and finite");
    OFL_ENSURE(Positive(p.seconds()), where, ": seconds=", p.seconds(), " must be > 0 and finite");
    OFL_ENSURE(p.group_size() >= 2, where, ": group_size=", p.group_size(), " must be >= 2");
    OFL_ENSURE(bytes_by_group[p.group_size()].insert(p.bytes()).second, where,
               ": bytes=", p.bytes(), " is listed twice for group_size=", p.group_size());
  }
  for (const auto& [group, bytes] : bytes_by_group) {
    OFL_ENSURE(bytes.size() >= 2, at, ": group_size=", group, " has ", bytes.size(),
               " point (a table needs >= 2 sizes per group size)");
  }
  return Status::OK();
}

Status CheckLevel(const std::string& cluster, const proto::LinkLevel& level, int index,
                  int num_levels, int64_t inner_size) {
  std::string where = StrCat("cluster '", cluster, "' level ", index, " ('", level.name(), "')");
  bool outermost = index + 1 == num_levels;
  if (level.size() == 0) {
    OFL_ENSURE(outermost, where, ": size 0 (no limit) is allowed on the outermost level only");
  } else {
    OFL_ENSURE(level.size() >= 1, where, ": size=", level.size(), " must be >= 1");
    OFL_ENSURE(level.size() % inner_size == 0, where, ": size=", level.size(),
               " is not a multiple of the inner level's size ", inner_size);
  }
  OFL_ENSURE(std::isfinite(level.bandwidth_gbps()) && level.bandwidth_gbps() > 0, where,
             ": bandwidth_gbps=", level.bandwidth_gbps(), " must be > 0");
  OFL_ENSURE(std::isfinite(level.latency_us()) && level.latency_us() >= 0, where,
             ": latency_us=", level.latency_us(), " must be >= 0");
  static const std::set<std::string> kKinds = {"all_reduce", "reduce_scatter", "all_gather",
                                               "all_to_all", "send_recv"};
  std::set<std::string> seen;
  for (int i = 0; i < level.collectives_size(); ++i) {
    const proto::CollectiveFigure& c = level.collectives(i);
    const std::string at = StrCat(where, " collectives[", i, "]");
    OFL_ENSURE(kKinds.count(c.kind()) > 0, at, ": kind='", c.kind(),
               "' is not one of all_reduce, reduce_scatter, all_gather, all_to_all, send_recv");
    OFL_ENSURE(seen.insert(c.kind()).second, at, ": kind='", c.kind(), "' is listed twice");
    OFL_ENSURE(std::isfinite(c.bandwidth_gbps()) && c.bandwidth_gbps() > 0, at, " (", c.kind(),
               "): bandwidth_gbps=", c.bandwidth_gbps(), " must be > 0");
    OFL_ENSURE(std::isfinite(c.latency_us()) && c.latency_us() >= 0, at, " (", c.kind(),
               "): latency_us=", c.latency_us(), " must be >= 0");
    OFL_RETURN_IF_ERROR(CheckPoints(c, StrCat(at, " (", c.kind(), ")")));
  }
  return Status::OK();
}

LinkLevel ToLinkLevel(const proto::LinkLevel& level) {
  LinkLevel l{
      level.name(), level.size(), level.bandwidth_gbps() * 1e9, level.latency_us() * 1e-6, {}};
  for (const proto::CollectiveFigure& c : level.collectives()) {
    CollectiveFigure& f = l.collectives[c.kind()];
    f = {c.bandwidth_gbps() * 1e9, c.latency_us() * 1e-6, {}};
    for (const proto::CollectivePoint& p : c.points()) {
      f.points[p.group_size()].push_back({p.bytes(), p.seconds()});
    }
    for (auto& [group, samples] : f.points) {
      std::sort(
          samples.begin(), samples.end(),
          [](const CollectiveSample& a, const CollectiveSample& b) { return a.bytes < b.bytes; });
    }
  }
  return l;
}

}  // namespace

Maybe<Cluster> Cluster::FromProto(const proto::Cluster& cluster) {
  OFL_ENSURE(!cluster.name().empty(), "cluster: the name is empty");
  const std::string& name = cluster.name();
  OFL_ENSURE(cluster.levels_size() > 0, "cluster '", name, "' has no link levels");
  Cluster result;
  int64_t inner_size = 1;
  for (int i = 0; i < cluster.levels_size(); ++i) {
    const proto::LinkLevel& level = cluster.levels(i);
    OFL_RETURN_IF_ERROR(CheckLevel(name, level, i, cluster.levels_size(), inner_size));
    inner_size = level.size();
    result.levels_.push_back(ToLinkLevel(level));
  }
  OFL_ENSURE(cluster.device().memory_bytes() > 0, "cluster '", name,
             "': device.memory_bytes=", cluster.device().memory_bytes(), " must be > 0");
  OFL_ENSURE(cluster.device().cache_bytes() >= 0, "cluster '", name,
             "': device.cache_bytes=", cluster.device().cache_bytes(), " must be >= 0");
  OFL_ENSURE(cluster.device().cache_bytes() == 0 ||
                 (std::isfinite(cluster.device().memory_read_bytes_per_s()) &&
                  cluster.device().memory_read_bytes_per_s() > 0),
             "cluster '", name,
             "': device.memory_read_bytes_per_s=", cluster.device().memory_read_bytes_per_s(),
             " must be > 0 with a cache model");
  for (const auto& [dtype, flops] : cluster.device().flops()) {
    OFL_ENSURE(ParseDataType(dtype).ok(), "cluster '", name, "': device.flops has '", dtype,
               "', which is not a dtype name");
    OFL_ENSURE(std::isfinite(flops) && flops > 0, "cluster '", name, "': device.flops['", dtype,
               "']=", flops, " must be > 0");
  }
  OFL_ASSIGN_OR_RETURN(result.compute_table_, ComputeTable::FromProto(name, cluster.device()));
  result.proto_ = cluster;
  // Unknown fields (a newer writer's) would print as "6: 0x..." in ToText,
  // which Parse refuses: Save must write what Load reads back.
  result.proto_.DiscardUnknownFields();
  return result;
}

Maybe<Cluster> Cluster::Parse(const std::string& text, const std::string& file_name) {
  proto::Cluster cluster;
  google::protobuf::TextFormat::Parser parser;
  FirstErrorCollector errors(file_name);
  parser.RecordErrorsTo(&errors);
  if (!parser.ParseFromString(text, &cluster)) {
    return InvalidArgument(errors.first().empty() ? file_name + ": does not parse"
                                                  : errors.first());
  }
  Maybe<Cluster> checked = FromProto(cluster);
  if (!checked.ok()) return InvalidArgument(file_name, ": ", checked.status().message());
  return checked;
}

Maybe<Cluster> Cluster::Load(const std::string& path) {
  std::error_code error;
  if (std::filesystem::is_directory(path, error)) {
    return InvalidArgument("cluster file ", path, ": is a directory, not a Cluster text file");
  }
  std::ifstream in(path);
  if (!in) return NotFound("cluster file ", path, ": cannot be opened");
  std::stringstream text;
  text << in.rdbuf();
  return Parse(text.str(), path);
}

Maybe<Cluster> Cluster::Preset(const std::string& name) {
  for (int i = 0; i < internal::kNumClusterPresets; ++i) {
    const internal::ClusterPresetText& preset = internal::kClusterPresets[i];
    if (name == preset.name) {
      return Parse(preset.text, StrCat("search/clusters/", name, ".pbtxt"));
    }
  }
  std::string known;
  for (const std::string& n : PresetNames()) known += (known.empty() ? "" : ", ") + n;
  return NotFound("no cluster preset '", name, "' (presets: ", known, ")");
}

std::vector<std::string> Cluster::PresetNames() {
  std::vector<std::string> names;
  for (int i = 0; i < internal::kNumClusterPresets; ++i) {
    names.push_back(internal::kClusterPresets[i].name);
  }
  return names;
}

std::string Cluster::ToText() const {
  std::string text;
  CHECK(google::protobuf::TextFormat::PrintToString(proto_, &text));
  return text;
}

Status Cluster::Save(const std::string& path) const {
  std::ofstream out(path);
  if (!out) return InvalidArgument("cluster file ", path, ": cannot be written");
  out << ToText();
  out.close();
  if (!out) return InvalidArgument("cluster file ", path, ": writing failed");
  return Status::OK();
}

const LinkLevel& Cluster::level(int index) const {
  CHECK(index >= 0 && index < num_levels()) << "level " << index << " of " << num_levels();
  return levels_[index];
}

Maybe<double> Cluster::Flops(DataType dtype) const {
  auto it = proto_.device().flops().find(DataTypeName(dtype));
  if (it == proto_.device().flops().end()) {
    return NotFound("cluster '", name(), "' gives no FLOP/s for dtype ", DataTypeName(dtype));
  }
  return it->second;
}

Maybe<std::vector<int>> Cluster::AxisLevels(const std::vector<int64_t>& hierarchy) const {
  int64_t devices = 1;
  for (int64_t size : hierarchy) {
    OFL_ENSURE(size >= 1, "cluster '", name(), "': mesh axis size ", size, " must be >= 1");
    devices *= size;
  }
  OFL_ENSURE(num_devices() == 0 || devices <= num_devices(), "cluster '", name(), "': a mesh of ",
             devices, " devices does not fit its ", num_devices());
  std::vector<int> levels(hierarchy.size(), 0);
  int64_t stride = 1;
  for (int axis = static_cast<int>(hierarchy.size()) - 1; axis >= 0; --axis) {
    int64_t span = stride * hierarchy[axis];
    if (hierarchy[axis] > 1) {
      int level = 0;
      // The outermost level is one group holding every device.
      while (level + 1 < num_levels() && levels_[level].size % span != 0) ++level;
      levels[axis] = level;
    }
    stride = span;
  }
  return levels;
}

}  // namespace ofl
