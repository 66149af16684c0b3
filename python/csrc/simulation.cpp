// Binding of the simulated step (oneflow_lite/api/step_simulation.h):
// PlannedStrategy.simulate(...) -> a dict with the predicted step, every
// task's price and category, every act, the critical path, the predicted
// Chrome trace and the Plan's bytes; simulate_plan(plan_bytes, seconds, ...)
// replays a plan with other task times (python/oneflow_lite/explain.py);
// plan_by_simulation(...) plans autoddl and the presets and chooses by the
// simulated step (api/simulated_choice.h).
#include <pybind11/stl.h>

#include "convert.h"
#include "oneflow_lite/api/session.h"
#include "oneflow_lite/api/simulated_choice.h"
#include "oneflow_lite/api/step_simulation.h"
#include "planned.h"

namespace ofl::python {
namespace {

py::dict RunDict(const SimulatedRun& run) {
  py::dict d;
  d["step_s"] = run.step_s;
  d["slowest_rank"] = run.slowest_rank;
  d["rank_end_s"] = run.rank_end_s;
  py::list acts;
  for (const SimulatedAct& a : run.acts) {
    acts.append(py::make_tuple(a.task, a.act, a.start_s, a.end_s, a.wait_s));
  }
  d["acts"] = acts;  // (task, act, start_s, end_s, wait_s)
  d["critical_path"] = run.critical_path;
  return d;
}

py::dict StepDict(const SimulatedStep& step, const StepSimulationOptions& options,
                  int64_t iterations) {
  py::dict d = RunDict(step.run);
  py::list tasks;
  for (int t = 0; t < step.plan.tasks_size(); ++t) {
    const proto::TaskProto& task = step.plan.tasks(t);
    const TaskCost& c = step.costs[t];
    py::dict row;
    row["task"] = t;
    row["name"] = step.task_names[t];
    row["category"] = c.category;
    row["kind"] = proto::TaskProto::Kind_Name(task.kind());
    row["rank"] = task.rank();
    row["stream"] = task.stream();
    row["seconds"] = c.seconds;
    row["flops"] = c.flops;
    row["bytes"] = c.bytes;
    row["tabled"] = c.tabled;
    row["exact"] = c.exact;
    row["cold_bytes"] = c.cold_bytes;
    const bool collective = task.kind() == proto::TaskProto::BOXING &&
                            task.boxing_conf().group_id() >= 0 &&
                            task.boxing_conf().group_size() >= 2;
    row["group_id"] = collective ? task.boxing_conf().group_id() : -1;
    tasks.append(row);
  }
  d["tasks"] = tasks;
  d["iterations"] = iterations;
  d["trace_json"] = SimulatedTraceJson(step);
  d["plan"] = py::bytes(step.plan.SerializeAsString());
  py::dict o;
  o["memory_bandwidth"] = options.cost.memory_bandwidth;
  o["boxing_overhead_s"] = options.cost.boxing_overhead_s;
  o["act_overhead_s"] = options.simulation.act_overhead_s;
  o["message_s"] = options.simulation.message_s;
  d["options"] = o;
  return d;
}

Cluster ClusterOf(const py::object& cluster) {
  if (py::isinstance<Cluster>(cluster)) return cluster.cast<Cluster>();
  if (py::isinstance<py::str>(cluster)) return Unwrap(FindCluster(cluster.cast<std::string>()));
  throw py::type_error("cluster must be a Cluster, a preset name or a file path");
}

py::list ChoiceRows(const SimulatedChoice& c) {
  py::list rows;
  for (size_t i = 0; i < c.rows.size(); ++i) {
    const ChoiceRow& r = c.rows[i];
    py::dict d;
    d["name"] = r.name;
    d["additive_s"] = r.additive_s;
    d["simulated_s"] = r.simulated_s;
    d["skipped"] = r.skipped;
    d["chosen"] = static_cast<int>(i) == c.chosen_row;
    rows.append(d);
  }
  return rows;
}

}  // namespace

StrategyReport SimulatedReport(const PyPlanned& p, const MemoryEstimate* memory) {
  StrategyReport report = Unwrap(ReportPlanned(*p.graph, p.planned, memory));
  if (!SimulationAffordable(*p.graph, p.planned.strategy)) return report;
  DistributedOptions session;
  session.micro_batches = p.planned.model->options().micro_batches;
  Maybe<SimulatedStep> step =
      SimulateSessionStep(*p.graph, p.planned.strategy, {}, session, p.planned.model->cluster(),
                          DefaultStepSimulationOptions(p.planned.model->cluster()));
  if (step.ok()) AddSimulationToReport(step.value(), &report);
  return report;
}

namespace {

// plan_by_simulation (searchers ranked by a simulated step) and
// simulate_plan (a Plan replayed with given task times).
void BindPlanSimulation(py::module_& m) {
  m.def(
      "plan_by_simulation",
      [](const Program& program, const std::vector<int64_t>& hierarchy, const py::object& cluster,
         const std::string& searcher, const std::vector<std::string>& candidates,
         const std::vector<std::string>& fetches, int64_t num_slots, int64_t micro_batches,
         int64_t gradient_bucket_bytes, const std::map<std::string, std::string>& pinned,
         const std::optional<int64_t>& memory_limit,
         const std::optional<std::vector<int64_t>>& ranks) {
        const Cluster c = ClusterOf(cluster);
        const Placement placement = Unwrap(MeshPlacement(hierarchy, ranks));
        auto graph = std::make_shared<const OpGraph>(program.graph());
        PlanRequest request;
        request.searcher = searcher;
        request.pinned = pinned;
        request.micro_batches = micro_batches;
        request.memory_limit = memory_limit;
        request.gradient_bucket_bytes = gradient_bucket_bytes;
        DistributedOptions session;
        session.num_slots = num_slots;
        session.micro_batches = micro_batches;
        session.gradient_bucket_bytes = gradient_bucket_bytes;
        Maybe<SimulatedChoice> choice = SimulatedChoice{};
        {
          py::gil_scoped_release release;
          choice = ChooseBySimulation(*graph, placement, c, request, candidates, fetches, session);
        }
        SimulatedChoice result = Unwrap(std::move(choice));
        py::list rows = ChoiceRows(result);
        const std::string text = result.ToText();
        return py::make_tuple(PyPlanned{graph, std::move(result.chosen)}, rows, text);
      },
      py::arg("program"), py::arg("hierarchy"), py::arg("cluster"), py::arg("searcher") = "autoddl",
      py::arg("candidates") = DefaultSimulationCandidates(),
      py::arg("fetches") = std::vector<std::string>{}, py::arg("num_slots") = 2,
      py::arg("micro_batches") = 1,
      py::arg("gradient_bucket_bytes") = DistributedOptions{}.gradient_bucket_bytes,
      py::arg("pinned") = std::map<std::string, std::string>{},
      py::arg("memory_limit") = py::none(), py::arg("ranks") = py::none(),
      "(PlannedStrategy, rows, text): `searcher` (its additive model inside its loop) and "
      "`candidates` planned on one cost model, each simulated as a DistributedSession with "
      "these arguments would run it, the shortest simulated step chosen; rows: per candidate "
      "name, additive_s, simulated_s, skipped (why it does not apply), chosen");
  m.def("simulation_candidates", &DefaultSimulationCandidates,
        "the searchers plan_by_simulation and auto_parallel(choose_by_simulation=True) "
        "simulate beside the search's answer: the rule-based expert presets");
  m.def(
      "simulate_plan",
      [](const py::bytes& plan_bytes, const std::vector<double>& task_seconds, int64_t iterations,
         double act_overhead_s, double message_s) {
        proto::Plan plan;
        if (!plan.ParseFromString(std::string(plan_bytes))) {
          throw py::value_error("simulate_plan: plan_bytes is no serialized Plan");
        }
        SimulationOptions o;
        o.iterations = iterations;
        o.act_overhead_s = act_overhead_s;
        o.message_s = message_s;
        return RunDict(Unwrap(ReplayPlan(plan, task_seconds, o)));
      },
      py::arg("plan_bytes"), py::arg("task_seconds"), py::arg("iterations") = 1,
      py::arg("act_overhead_s") = 0.0, py::arg("message_s") = 0.0,
      "simulates a Plan (bytes, e.g. simulate(...)['plan']) with task_seconds[t] per act of "
      "task t (a replay of measured times)");
}

}  // namespace

void BindSimulation(py::module_& m) {
  auto planned = py::reinterpret_borrow<py::class_<PyPlanned>>(m.attr("PlannedStrategy"));
  planned.def(
      "simulate",
      [](const PyPlanned& p, const std::vector<std::string>& fetches, int64_t num_slots,
         const std::optional<int64_t>& micro_batches, int64_t gradient_bucket_bytes,
         const std::optional<double>& memory_bandwidth,
         const std::optional<double>& boxing_overhead_s,
         const std::optional<double>& act_overhead_s, const std::optional<double>& message_s,
         const std::optional<Cluster>& cluster) {
        DistributedOptions o;
        o.num_slots = num_slots;
        o.micro_batches = micro_batches ? *micro_batches : p.planned.model->options().micro_batches;
        o.gradient_bucket_bytes = gradient_bucket_bytes;
        const Cluster& priced = cluster ? *cluster : p.planned.model->cluster();
        StepSimulationOptions s = DefaultStepSimulationOptions(priced);
        if (memory_bandwidth) s.cost.memory_bandwidth = *memory_bandwidth;
        if (boxing_overhead_s) s.cost.boxing_overhead_s = *boxing_overhead_s;
        if (act_overhead_s) s.simulation.act_overhead_s = *act_overhead_s;
        if (message_s) s.simulation.message_s = *message_s;
        Maybe<SimulatedStep> step = SimulatedStep{};
        {
          py::gil_scoped_release release;
          step = SimulateSessionStep(*p.graph, p.planned.strategy, fetches, o, priced, s);
        }
        return StepDict(Unwrap(std::move(step)), s, o.micro_batches);
      },
      py::arg("fetches") = std::vector<std::string>{}, py::arg("num_slots") = 2,
      py::arg("micro_batches") = py::none(),
      py::arg("gradient_bucket_bytes") = DistributedOptions{}.gradient_bucket_bytes,
      py::arg("memory_bandwidth") = py::none(), py::arg("boxing_overhead_s") = py::none(),
      py::arg("act_overhead_s") = py::none(), py::arg("message_s") = py::none(),
      py::arg("cluster") = py::none(),
      "the step of a DistributedSession with these arguments, simulated on the planning "
      "Cluster or `cluster` (e.g. with shape entries of its kernels: calibrate_plan_kernels) "
      "(oneflow_lite/api/step_simulation.h): step_s, per task its price and category, "
      "every act (task, act, start_s, end_s, wait_s), the slowest rank's critical path, "
      "trace_json (the predicted Chrome trace) and plan (the Plan's bytes)");
  BindPlanSimulation(m);
}

}  // namespace ofl::python
