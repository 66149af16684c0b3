// Kernel times at the exact shapes plans run (calibrate_shapes.h).
#include "oneflow_lite/api/calibrate_shapes.h"

#include <map>
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

}  // namespace

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

}  // namespace ofl
