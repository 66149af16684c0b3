// The simulated step of oneflow_lite/api/step_simulation.h.
#include "oneflow_lite/api/step_simulation.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <utility>

#include "graph/distributed_lowering.h"
#include "oneflow_lite/core/json.h"
#include "runtime/actor_kinds.h"
#include "runtime/memory_plan.h"

namespace ofl {

namespace {

std::string Micros(double seconds) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.3f", seconds * 1e6);
  return buf;
}

// Reshape and flatten tasks whose output the runtime's memory plan makes a
// view of the input (runtime/memory_plan.h): their kernel copies nothing.
void PriceViews(const proto::Plan& plan, std::vector<TaskCost>* costs) {
  std::vector<int64_t> producer(plan.registers_size(), -1);
  std::set<int64_t> ranks;
  for (const proto::TaskProto& t : plan.tasks()) {
    for (int64_t r : t.outputs()) producer[r] = t.id();
    for (int64_t r : t.ctrl_outputs()) producer[r] = t.id();
    ranks.insert(t.rank());
  }
  for (int64_t rank : ranks) {
    const MemoryPlan memory = PlanRegisterMemory(plan, rank, producer);
    if (memory.offset.empty()) continue;
    for (const proto::TaskProto& t : plan.tasks()) {
      const std::string& type = t.op_conf().op_type();
      if (t.rank() != rank || t.kind() != proto::TaskProto::COMPUTE ||
          (type != "reshape" && type != "flatten") || t.inputs_size() != 1 ||
          t.outputs_size() != 1) {
        continue;
      }
      const int64_t in = memory.offset[t.inputs(0)], out = memory.offset[t.outputs(0)];
      if (in >= 0 && in == out) (*costs)[t.id()].seconds = 0;
    }
  }
}

}  // namespace

StepSimulationOptions DefaultStepSimulationOptions(const Cluster& cluster) {
  StepSimulationOptions o;
  const ComputeTable& table = cluster.compute_table();
  double largest = 0;
  for (const proto::ComputeEntry& e : cluster.proto().device().compute()) {
    if (e.op_type() == "relu" && e.dtype() == "float32") largest = std::max(largest, e.flops());
  }
  const std::optional<double> relu =
      largest > 0 ? table.Seconds("relu", DataType::kFloat32, largest) : std::nullopt;
  const Maybe<double> flops = cluster.Flops(DataType::kFloat32);
  o.cost.memory_bandwidth = relu && *relu > 0 ? 8.0 * largest / *relu
                            : flops.ok()      ? flops.value() / 20.0
                                              : 30e9;
  o.cost.kernel_overhead_s = 1e-6;
  o.cost.boxing_overhead_s = 20e-6;
  o.simulation.act_overhead_s = 4e-6;
  o.simulation.message_s = 10e-6;
  return o;
}

Maybe<SimulatedStep> SimulateSessionStep(const OpGraph& graph, const Strategy& strategy,
                                         const std::vector<std::string>& fetches,
                                         const DistributedOptions& options, const Cluster& cluster,
                                         const StepSimulationOptions& simulation) {
  SimulatedStep step;
  OFL_ASSIGN_OR_RETURN(step.plan,
                       LowerDistributed(graph, strategy, fetches, SessionLowering(options)));
  for (const proto::TaskProto& t : step.plan.tasks()) step.task_names.push_back(TaskDisplayName(t));
  OFL_ASSIGN_OR_RETURN(step.costs, PriceTasks(step.plan, cluster, simulation.cost));
  PriceViews(step.plan, &step.costs);  // sessions always plan memory
  std::vector<double> seconds;
  for (const TaskCost& c : step.costs) seconds.push_back(c.seconds);
  SimulationOptions sim = simulation.simulation;
  sim.iterations = std::max<int64_t>(1, options.micro_batches);
  OFL_ASSIGN_OR_RETURN(step.run, SimulatePlan(step.plan, seconds, sim));
  return step;
}

bool SimulationAffordable(const OpGraph& graph, const Strategy& strategy) {
  const int64_t ops = static_cast<int64_t>(graph.ops().size());
  const int64_t ranks = static_cast<int64_t>(strategy.placement().ranks().size());
  return ops * ranks <= kReportSimulationBudget;
}

Maybe<SimulatedRun> ReplayPlan(const proto::Plan& plan, const std::vector<double>& task_seconds,
                               const SimulationOptions& options) {
  return SimulatePlan(plan, task_seconds, options);
}

void AddSimulationToReport(const SimulatedStep& step, StrategyReport* report) {
  report->simulated_seconds = step.run.step_s;
  std::map<std::pair<std::string, int64_t>, double> by_op_rank;
  for (const SimulatedAct& a : step.run.acts) {
    const proto::TaskProto& t = step.plan.tasks(static_cast<int>(a.task));
    if (t.kind() != proto::TaskProto::COMPUTE) continue;
    // A folded variable's node carries its update, "update/<var>" (graph/optimizer_pass.h).
    const std::string& name = t.op_conf().name();
    const bool update = name.rfind("update/", 0) == 0;
    by_op_rank[{update ? name.substr(7) : name, a.rank}] += a.end_s - a.start_s;
  }
  report->simulated_op_seconds.clear();
  for (const auto& [key, seconds] : by_op_rank) {
    double& s = report->simulated_op_seconds[key.first];
    s = std::max(s, seconds);
  }
}

std::string SimulatedTraceJson(const SimulatedStep& step) {
  std::string out = "{\"traceEvents\": [\n";
  bool first = true;
  auto add = [&](const std::string& event) {
    out += first ? "  " : ",\n  ";
    out += event;
    first = false;
  };
  std::set<int64_t> ranks;
  std::set<std::pair<int64_t, int64_t>> streams;
  for (const SimulatedAct& a : step.run.acts) {
    ranks.insert(a.rank);
    streams.insert({a.rank, a.stream});
  }
  for (int64_t r : ranks) {
    add(StrCat("{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": ", r,
               ", \"args\": {\"name\": \"rank ", r, " (predicted)\"}}"));
  }
  for (const auto& [r, s] : streams) {
    add(StrCat("{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": ", r, ", \"tid\": ", s,
               ", \"args\": {\"name\": \"stream ", s, "\"}}"));
  }
  for (const SimulatedAct& a : step.run.acts) {
    const size_t t = static_cast<size_t>(a.task);
    add(StrCat("{\"name\": ", JsonString(step.task_names.at(t)), ", \"ph\": \"X\", \"pid\": ",
               a.rank, ", \"tid\": ", a.stream, ", \"ts\": ", Micros(a.start_s),
               ", \"dur\": ", Micros(a.end_s - a.start_s), ", \"args\": {\"task\": ", a.task,
               ", \"act\": ", a.act, ", \"category\": ", JsonString(step.costs.at(t).category),
               ", \"wait_us\": ", Micros(a.wait_s), "}}"));
  }
  out += "\n]}\n";
  return out;
}

}  // namespace ofl
