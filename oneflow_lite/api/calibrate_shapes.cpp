// Kernel times at the exact shapes plans run (calibrate_shapes.h).
#include "oneflow_lite/api/calibrate_shapes.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <tuple>
#include <utility>

#include "graph/plan_task_cost.h"
#include "oneflow_lite/core/attr.h"

namespace ofl {
namespace {

// One distinct kernel: its key and the plan task it was first seen in.
struct Kernel {
  std::string key;
  const proto::Plan* plan = nullptr;
  const proto::TaskProto* task = nullptr;
};

// Adds kernel `index` of `k` to `graph` as op "k<index>" on inputs of its
// own; the op's name, or an error saying why it does not build.
Maybe<std::string> AddKernel(const Kernel& k, size_t index, OpGraph* graph) {
  const proto::OpConf& conf = k.task->op_conf();
  OFL_ASSIGN_OR_RETURN(const OpDef* def, OpRegistry::Find(conf.op_type()));
  std::vector<std::string> inputs;
  for (int j = 0; j < k.task->inputs_size(); ++j) {
    const proto::RegisterDesc& reg = k.plan->registers(static_cast<int>(k.task->inputs(j)));
    OFL_ASSIGN_OR_RETURN(TensorDesc d, DescFromProto(reg.desc()));
    inputs.push_back(StrCat("k", index, "_in", j));
    // Optimizer state written in place must be a variable (any values will do).
    if (def->is_mutable_input(j)) {
      OFL_RETURN_IF_ERROR(graph->AddVariable(inputs.back(), Tensor::Full(d.shape, d.dtype, 0.5),
                                             /*trainable=*/false));
    } else {
      OFL_RETURN_IF_ERROR(graph->AddInput(inputs.back(), d));
    }
  }
  AttrMap attrs;
  for (const auto& [name, value] : conf.attrs()) attrs.Set(name, AttrFromProto(value));
  const std::string name = StrCat("k", index);
  OFL_ASSIGN_OR_RETURN(std::vector<std::string> outs,
                       graph->AddOp(conf.op_type(), inputs, attrs, name));
  (void)outs;
  return name;
}

// The distinct compute kernels with FLOPs of `plans`, by (op type, key),
// first seen first (a kernel without FLOPs is priced by the bytes it moves).
Maybe<std::vector<Kernel>> DistinctKernels(const std::vector<proto::Plan>& plans) {
  std::vector<Kernel> kernels;
  std::map<std::pair<std::string, std::string>, size_t> seen;
  for (const proto::Plan& plan : plans) {
    for (const proto::TaskProto& task : plan.tasks()) {
      if (task.kind() != proto::TaskProto::COMPUTE) continue;
      OFL_ASSIGN_OR_RETURN(const double flops, KernelFlops(plan, task));
      if (!(flops > 0)) continue;
      OFL_ASSIGN_OR_RETURN(std::string key, KernelShapeKey(plan, task));
      if (seen.emplace(std::make_pair(task.op_conf().op_type(), key), kernels.size()).second) {
        kernels.push_back({key, &plan, &task});
      }
    }
  }
  return kernels;
}

// The table entry of kernel `k` from its timed op (times of other ops, none
// here, are not its own).
void AppendEntries(const std::vector<KernelTime>& times, const std::string& op, const Kernel& k,
                   ShapeTimes* out) {
  for (const KernelTime& t : times) {
    if (t.op != op) continue;
    proto::ComputeEntry e;
    e.set_op_type(t.op_type);
    e.set_dtype(DataTypeName(t.dtype));
    e.set_flops(t.flops);
    e.set_seconds(t.seconds);
    e.set_shape(k.key);
    out->entries.push_back(std::move(e));
  }
}

// One cache of cpu0 from sysfs: its size and how many CPUs share it (0 when
// sysfs does not say). sysconf is no substitute: on AMD EPYC guests glibc
// reports the whole package's L3 (320 MiB where sysfs says 32 MiB).
struct SysCache {
  int64_t bytes = 0;
  int64_t shared_by = 0;
};

SysCache ReadCache(int level) {
  for (int index = 0; index < 8; ++index) {
    const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index);
    std::ifstream level_file(dir + "/level"), type_file(dir + "/type");
    int found = 0;
    std::string type;
    if (!(level_file >> found) || !(type_file >> type)) break;
    if (found != level || type == "Instruction") continue;
    std::ifstream size_file(dir + "/size"), shared_file(dir + "/shared_cpu_list");
    std::string size, shared;
    size_file >> size;
    shared_file >> shared;
    SysCache c;
    char* end = nullptr;
    const long long n = std::strtoll(size.c_str(), &end, 10);
    c.bytes = n * (end != nullptr && *end == 'K'   ? 1024
                   : end != nullptr && *end == 'M' ? 1 << 20
                                                   : 1);
    // "0-1", "0,2,4", "0-3,8-11": count the CPUs
    std::stringstream ranges(shared);
    std::string range;
    while (std::getline(ranges, range, ',')) {
      const size_t dash = range.find('-');
      c.shared_by += dash == std::string::npos ? 1
                                               : std::stoll(range.substr(dash + 1)) -
                                                     std::stoll(range.substr(0, dash)) + 1;
    }
    return c;
  }
  return {};
}

// Bytes per second one thread reads from memory: the best of 3 passes
// summing a buffer 4 x the last-level cache (so no pass finds it cached).
double ReadBandwidth(int64_t llc_bytes) {
  std::vector<uint64_t> buffer(static_cast<size_t>(4 * llc_bytes) / sizeof(uint64_t), 1);
  double best = 0;
  volatile uint64_t sink = 0;
  for (int pass = 0; pass < 3; ++pass) {
    const auto start = std::chrono::steady_clock::now();
    uint64_t sum = 0;
    for (uint64_t v : buffer) sum += v;
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    sink = sink + sum;
    if (s > 0) best = std::max(best, static_cast<double>(buffer.size() * sizeof(uint64_t)) / s);
  }
  return best;
}

}  // namespace

CacheModel MeasureCacheModel() {
  const SysCache l2 = ReadCache(2), l3 = ReadCache(3);
  const long cores = sysconf(_SC_NPROCESSORS_ONLN);
  const int64_t sharing = l3.shared_by > 0 ? l3.shared_by : (cores > 0 ? cores : 1);
  CacheModel m;
  m.cache_bytes = l2.bytes + l3.bytes / sharing;
  if (m.cache_bytes <= 0) m.cache_bytes = int64_t{8} << 20;
  const int64_t llc = l3.bytes > 0 ? l3.bytes : l2.bytes > 0 ? l2.bytes : int64_t{32} << 20;
  m.memory_read_bytes_per_s = ReadBandwidth(std::min<int64_t>(llc, int64_t{256} << 20));
  return m;
}

Maybe<ShapeTimes> TimePlanKernels(const std::vector<proto::Plan>& plans,
                                  const KernelTimingOptions& options) {
  OFL_ASSIGN_OR_RETURN(const std::vector<Kernel> kernels, DistinctKernels(plans));
  ShapeTimes out;
  for (size_t i = 0; i < kernels.size(); ++i) {
    // Each kernel in a graph and session of its own: independent ops of one
    // graph may run at once and lengthen each other's acts.
    OpGraph alone;
    Maybe<std::string> name = AddKernel(kernels[i], i, &alone);
    Maybe<std::vector<KernelTime>> times =
        name.ok() ? TimeKernels(alone, options) : Maybe<std::vector<KernelTime>>(name.status());
    if (!times.ok()) {
      out.skipped.push_back(StrCat(kernels[i].task->op_conf().op_type(), " ", kernels[i].key, ": ",
                                   times.status().message()));
      continue;
    }
    AppendEntries(times.value(), name.value(), kernels[i], &out);
  }
  return out;
}

Maybe<Cluster> AddShapeEntries(const Cluster& cluster,
                               const std::vector<proto::ComputeEntry>& entries) {
  using Key = std::tuple<std::string, std::string, std::string>;
  std::map<Key, size_t> fresh;
  for (size_t i = 0; i < entries.size(); ++i) {
    const proto::ComputeEntry& e = entries[i];
    OFL_ENSURE(!e.shape().empty(), "add shape entries: entries[", i, "] (", e.op_type(),
               ", flops=", e.flops(), ") has no shape");
    fresh[Key{e.op_type(), e.dtype(), e.shape()}] = i;
  }
  proto::Cluster p = cluster.proto();
  proto::DeviceSpec* device = p.mutable_device();
  google::protobuf::RepeatedPtrField<proto::ComputeEntry> kept;
  for (const proto::ComputeEntry& e : device->compute()) {
    if (e.shape().empty() || !fresh.count(Key{e.op_type(), e.dtype(), e.shape()})) {
      *kept.Add() = e;
    }
  }
  for (const auto& [key, i] : fresh) *kept.Add() = entries[i];
  device->mutable_compute()->Swap(&kept);
  return Cluster::FromProto(p);
}

Maybe<Cluster> WithCacheModel(const Cluster& cluster, const CacheModel& model) {
  OFL_ENSURE(model.cache_bytes > 0 && std::isfinite(model.memory_read_bytes_per_s) &&
                 model.memory_read_bytes_per_s > 0,
             "cache model: cache_bytes=", model.cache_bytes,
             " and memory_read_bytes_per_s=", model.memory_read_bytes_per_s, " must be > 0");
  proto::Cluster p = cluster.proto();
  p.mutable_device()->set_cache_bytes(model.cache_bytes);
  p.mutable_device()->set_memory_read_bytes_per_s(model.memory_read_bytes_per_s);
  return Cluster::FromProto(p);
}

}  // namespace ofl
