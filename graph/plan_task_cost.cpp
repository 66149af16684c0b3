// Task times of graph/plan_task_cost.h.
#include "graph/plan_task_cost.h"

#include <algorithm>
#include <cctype>
#include <map>

#include "graph/op_graph.h"
#include "graph/plan_cache_residency.h"
#include "oneflow_lite/core/attr.h"
#include "ops/op_registry.h"
#include "search/collective_time.h"

namespace ofl {

namespace {

using Conf = proto::BoxingConf;

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

int64_t RegisterBytes(const proto::Plan& plan, int64_t id) {
  return plan.registers(static_cast<int>(id)).bytes();
}

int64_t BytesOf(const proto::Plan& plan, const google::protobuf::RepeatedField<int64_t>& regs) {
  int64_t total = 0;
  for (int64_t r : regs) total += RegisterBytes(plan, r);
  return total;
}

// The innermost level whose groups hold every rank of `group`.
const LinkLevel& LevelOf(const Cluster& cluster,
                         const google::protobuf::RepeatedField<int64_t>& group) {
  for (int i = 0; i < cluster.num_levels(); ++i) {
    const int64_t size = cluster.level(i).size;
    if (size <= 0) return cluster.level(i);
    bool inside = true;
    for (int64_t r : group) inside &= r / size == group.Get(0) / size;
    if (inside) return cluster.level(i);
  }
  return cluster.level(cluster.num_levels() - 1);
}

// Contention factor per rank: the plan's computing ranks in its innermost
// group.
std::map<int64_t, double> ContentionByRank(const proto::Plan& plan, const Cluster& cluster) {
  std::map<int64_t, int64_t> per_group;
  std::map<int64_t, int64_t> group_of;
  const int64_t size = cluster.level(0).size;
  for (const proto::TaskProto& t : plan.tasks()) {
    if (t.kind() != proto::TaskProto::COMPUTE || group_of.count(t.rank())) continue;
    group_of[t.rank()] = size > 0 ? t.rank() / size : 0;
    ++per_group[group_of[t.rank()]];
  }
  std::map<int64_t, double> factor;
  for (const auto& [rank, group] : group_of) {
    factor[rank] = cluster.compute_table().Contention(per_group[group]);
  }
  return factor;
}

// A compute task's kernel: the op's context on the task's physical input
// shapes (attributes complete), its output descs and its FLOPs (OpDef cost).
struct TaskKernel {
  OpContext ctx;
  std::vector<TensorDesc> outs;
  double flops = 0;
};

Maybe<TaskKernel> KernelOf(const proto::Plan& plan, const proto::TaskProto& task) {
  const proto::OpConf& conf = task.op_conf();
  const std::string where =
      StrCat("task ", task.id(), " (", conf.op_type(), " '", conf.name(), "')");
  OFL_ASSIGN_OR_RETURN(const OpDef* def, OpRegistry::Find(conf.op_type()));
  TaskKernel k;
  k.ctx.op_type = conf.op_type();
  k.ctx.op_name = conf.name();
  for (int64_t r : task.inputs()) {
    OFL_ASSIGN_OR_RETURN(TensorDesc d, DescFromProto(plan.registers(static_cast<int>(r)).desc()));
    k.ctx.inputs.push_back(d);
  }
  for (const auto& [name, v] : conf.attrs()) k.ctx.attrs.Set(name, AttrFromProto(v));
  Status complete = def->CompleteAttrs(&k.ctx);
  OFL_ENSURE(complete.ok(), where, ": ", complete.message());
  for (int64_t r : task.outputs()) {
    OFL_ASSIGN_OR_RETURN(TensorDesc d, DescFromProto(plan.registers(static_cast<int>(r)).desc()));
    k.outs.push_back(d);
  }
  k.flops = def->EstimateCost(k.ctx, k.outs).flops;
  return k;
}

std::string ShapeKeyOf(const OpContext& ctx) {
  std::string key;
  for (const TensorDesc& d : ctx.inputs) {
    key += StrCat(DataTypeName(d.dtype), d.shape.ToString(), " ");
  }
  return key + ctx.attrs.ToString();
}

// `residency`: the task's inputs' (plan_cache_residency.h), "" without a cache model.
Maybe<TaskCost> PriceCompute(const proto::Plan& plan, const proto::TaskProto& task,
                             const Cluster& cluster, const TaskCostOptions& options,
                             const std::string& residency) {
  const proto::OpConf& conf = task.op_conf();
  OFL_ASSIGN_OR_RETURN(const TaskKernel kernel, KernelOf(plan, task));
  const OpContext& ctx = kernel.ctx;
  const std::vector<TensorDesc>& outs = kernel.outs;
  TaskCost cost;
  cost.category = conf.op_type();
  cost.flops = kernel.flops;
  cost.bytes = BytesOf(plan, task.inputs()) + BytesOf(plan, task.outputs());
  DataType dtype = !outs.empty()         ? outs[0].dtype
                   : !ctx.inputs.empty() ? ctx.inputs[0].dtype
                                         : DataType::kFloat32;
  if (!IsFloating(dtype)) dtype = DataType::kFloat32;
  if (cost.flops > 0) {
    const ComputeTable& table = cluster.compute_table();
    std::optional<double> exact = table.ExactSeconds(conf.op_type(), dtype, ShapeKeyOf(ctx));
    std::optional<double> measured =
        exact ? exact : table.Seconds(conf.op_type(), dtype, cost.flops);
    cost.exact = exact.has_value();
    if (measured) {
      cost.seconds = *measured;
      cost.tabled = true;
    } else {
      OFL_ASSIGN_OR_RETURN(double per_second, cluster.Flops(dtype));
      cost.seconds = cost.flops / per_second;
    }
    // The table's times are of repeated runs, every input in the cache; a
    // cold input is read from memory once more (plan_cache_residency.h).
    if (!residency.empty()) {
      for (int i = 0; i < task.inputs_size(); ++i) {
        if (residency[static_cast<size_t>(i)] == 'c') {
          cost.cold_bytes += RegisterBytes(plan, task.inputs(i));
        }
      }
      cost.seconds += static_cast<double>(cost.cold_bytes) / cluster.memory_read_bytes_per_s();
    }
  } else {
    cost.bytes = 2 * BytesOf(plan, task.outputs());
    cost.seconds =
        static_cast<double>(cost.bytes) / options.memory_bandwidth + options.kernel_overhead_s;
  }
  return cost;
}

Maybe<TaskCost> PriceBoxing(const proto::Plan& plan, const proto::TaskProto& task,
                            const Cluster& cluster, const TaskCostOptions& options) {
  const Conf& b = task.boxing_conf();
  TaskCost cost;
  cost.category = "boxing " + Lower(Conf::Kind_Name(b.kind()));
  const int64_t in = BytesOf(plan, task.inputs()), out = BytesOf(plan, task.outputs());
  const int64_t p = b.group_size();
  std::optional<CollectiveKind> kind;
  double sent = 0;
  switch (b.kind()) {
    case Conf::ALL_REDUCE:
      kind = CollectiveKind::kAllReduce;
      sent = 2.0 * static_cast<double>(p - 1) / static_cast<double>(p) * static_cast<double>(in);
      break;
    case Conf::REDUCE_SCATTER:
      kind = CollectiveKind::kReduceScatter;
      sent = static_cast<double>(p - 1) / static_cast<double>(p) * static_cast<double>(in);
      break;
    case Conf::ALL_GATHER:
      kind = CollectiveKind::kAllGather;
      sent = static_cast<double>(p - 1) / static_cast<double>(p) * static_cast<double>(out);
      break;
    case Conf::ALL_TO_ALL:
      kind = CollectiveKind::kAllToAll;
      sent = static_cast<double>(p - 1) / static_cast<double>(p) * static_cast<double>(in);
      break;
    case Conf::SEND_RECV: {
      kind = CollectiveKind::kSendRecv;
      int64_t element = 4;
      if (!task.inputs().empty()) {
        OFL_ASSIGN_OR_RETURN(
            TensorDesc d, DescFromProto(plan.registers(static_cast<int>(task.inputs(0))).desc()));
        element = SizeOf(d.dtype);
      }
      for (const proto::Transfer& s : b.sends()) {
        if (s.peer() == task.rank()) continue;
        int64_t n = 1;
        for (int64_t d : s.shape()) n *= d;
        sent += static_cast<double>(n * element);
      }
      break;
    }
    default:
      break;
  }
  if (kind && p >= 2 && b.group_id() >= 0) {
    cost.bytes = static_cast<int64_t>(sent);
    cost.seconds = CollectiveSeconds(*kind, sent, p, LevelOf(cluster, b.group()));
  } else {
    cost.bytes = in + out;
    cost.seconds = static_cast<double>(in + out) / options.memory_bandwidth;
  }
  cost.seconds += options.boxing_overhead_s;
  return cost;
}

}  // namespace

Maybe<std::string> KernelShapeKey(const proto::Plan& plan, const proto::TaskProto& task) {
  OFL_ENSURE(task.kind() == proto::TaskProto::COMPUTE, "kernel shape key: task ", task.id(),
             " is no compute task");
  OFL_ASSIGN_OR_RETURN(const TaskKernel kernel, KernelOf(plan, task));
  return ShapeKeyOf(kernel.ctx);
}

Maybe<double> KernelFlops(const proto::Plan& plan, const proto::TaskProto& task) {
  OFL_ENSURE(task.kind() == proto::TaskProto::COMPUTE, "kernel flops: task ", task.id(),
             " is no compute task");
  OFL_ASSIGN_OR_RETURN(const TaskKernel kernel, KernelOf(plan, task));
  return kernel.flops;
}

std::string TaskCategory(const proto::TaskProto& task) {
  switch (task.kind()) {
    case proto::TaskProto::COMPUTE:
      return task.op_conf().op_type();
    case proto::TaskProto::BOXING:
      return "boxing " + Lower(Conf::Kind_Name(task.boxing_conf().kind()));
    default:
      return Lower(proto::TaskProto::Kind_Name(task.kind()));
  }
}

Maybe<std::vector<TaskCost>> PriceTasks(const proto::Plan& plan, const Cluster& cluster,
                                        const TaskCostOptions& options) {
  OFL_ENSURE(options.memory_bandwidth > 0,
             "price tasks: memory_bandwidth=", options.memory_bandwidth, " must be > 0");
  OFL_ENSURE(options.boxing_overhead_s >= 0,
             "price tasks: boxing_overhead_s=", options.boxing_overhead_s, " must be >= 0");
  OFL_ENSURE(options.kernel_overhead_s >= 0,
             "price tasks: kernel_overhead_s=", options.kernel_overhead_s, " must be >= 0");
  const std::map<int64_t, double> contention = ContentionByRank(plan, cluster);
  const std::vector<std::string> residency = cluster.cache_bytes() > 0
                                                 ? InputResidency(plan, cluster.cache_bytes())
                                                 : std::vector<std::string>(plan.tasks_size());
  std::vector<TaskCost> costs;
  costs.reserve(plan.tasks_size());
  for (int t = 0; t < plan.tasks_size(); ++t) {
    const proto::TaskProto& task = plan.tasks(t);
    TaskCost cost;
    switch (task.kind()) {
      case proto::TaskProto::COMPUTE: {
        OFL_ASSIGN_OR_RETURN(cost, PriceCompute(plan, task, cluster, options, residency[t]));
        auto it = contention.find(task.rank());
        if (it != contention.end()) cost.seconds *= it->second;
        break;
      }
      case proto::TaskProto::BOXING: {
        OFL_ASSIGN_OR_RETURN(cost, PriceBoxing(plan, task, cluster, options));
        break;
      }
      case proto::TaskProto::SOURCE:
      case proto::TaskProto::ACC:
        cost.bytes = BytesOf(plan, task.inputs()) + BytesOf(plan, task.outputs());
        cost.seconds = static_cast<double>(cost.bytes) / options.memory_bandwidth;
        break;
      default:
        break;
    }
    if (cost.category.empty()) cost.category = TaskCategory(task);
    costs.push_back(std::move(cost));
  }
  return costs;
}

}  // namespace ofl
