// Binding of a planned strategy (api/planning.h) and what a user reads off
// it: PlannedStrategy (its typed Strategy, searcher, stats, predicted step,
// bytes and memory, report, diff, save), StrategyDiff and MemoryEstimate.
// Saving writes protobuf JSON in C++ (api/strategy_io.h).
#include "planned.h"

#include <pybind11/stl.h>

#include "convert.h"
#include "oneflow_lite/api/strategy_io.h"

namespace ofl::python {
namespace {

py::dict StatsDict(const PlannedStrategy& p) {
  const PlanStats& s = p.stats;
  py::dict d;
  d["searcher"] = p.searcher;
  d["ops"] = s.ops;
  d["cost_nodes"] = s.cost_nodes;
  d["cost_edges"] = s.cost_edges;
  d["candidates"] = s.mean_candidates;        // per cost node
  d["op_candidates"] = s.mean_op_candidates;  // signatures per op (folded updates included)
  d["pruned"] = s.pruned;
  d["build_seconds"] = s.build_seconds;
  d["search_seconds"] = s.search_seconds;
  d["seconds"] = s.seconds;
  d["exact_proved"] = s.exact_proved;
  d["lower_bound"] = s.lower_bound;
  d["autoddl_start"] = s.autoddl_start;
  py::list starts;  // autoddl's own starts, before any minimum with other searchers
  for (const AutoddlStart& a : s.autoddl_starts) {
    py::dict start;
    start["name"] = a.name;
    start["start_s"] = a.start_seconds;
    start["final_s"] = a.final_seconds;
    starts.append(start);
  }
  d["autoddl_starts"] = starts;
  d["exact_start_s"] = s.exact_start_seconds < 0 ? py::object(py::none())
                                                 : py::object(py::float_(s.exact_start_seconds));
  py::object optimality = py::none();  // the plan's distance to the optimum, when measured
  if (s.optimality) {
    const Optimality& o = *s.optimality;
    py::dict od;
    od["proved"] = o.proved;
    od["gap"] = o.Gap(p.solution.total_seconds);
    od["bound_s"] = o.bound_seconds;
    od["bound"] = o.bound;
    od["best_s"] = o.best_seconds;
    od["seconds"] = o.seconds;
    od["cap_s"] = o.cap_seconds;
    od["text"] = o.ToText(p.solution.total_seconds);
    optimality = od;
  }
  d["optimality"] = optimality;
  d["note"] = s.note;
  d["predicted_step_s"] = p.solution.total_seconds;
  d["compute_s"] = p.solution.compute_seconds;
  d["communication_s"] = p.solution.transfer_seconds;
  // The searchers' additive proxy (the constraint they search under); the
  // predicted peak of a session is PlannedStrategy.predicted_memory(...).
  d["memory_bytes"] = p.solution.memory_bytes;
  return d;
}

// cost_model_buckets.h's StepEstimate as a dict (buckets as a list of dicts).
py::dict StepEstimateDict(const StepEstimate& e) {
  py::dict d;
  d["total_s"] = e.total_s;
  d["compute_s"] = e.compute_s;
  d["transfer_s"] = e.transfer_s;
  d["backward_s"] = e.backward_s;
  d["gradient_s"] = e.gradient_s;
  d["exposed_gradient_s"] = e.exposed_gradient_s;
  d["proxy_total_s"] = e.proxy_total_s;
  py::list buckets;
  for (const GradientBucket& b : e.buckets) {
    py::dict bd;
    bd["collective"] = b.collective;
    bd["hierarchy_axis"] = b.hierarchy_axis;
    bd["group_size"] = b.group_size;
    bd["level"] = b.level;
    bd["buffer_bytes"] = b.buffer_bytes;
    bd["sent_bytes"] = b.sent_bytes;
    bd["gradients"] = b.gradients;
    bd["ready_s"] = b.ready_s;
    bd["start_s"] = b.start_s;
    bd["seconds"] = b.seconds;
    buckets.append(bd);
  }
  d["buckets"] = buckets;
  return d;
}

// One rank of api/memory_estimate.h's estimate as a dict.
py::dict RankMemoryDict(const RankMemory& r) {
  py::dict d;
  d["rank"] = r.rank;
  d["total_bytes"] = r.total_bytes;
  d["arena_bytes"] = r.arena_bytes;
  d["planned_bytes"] = r.planned_bytes;
  d["parameter_bytes"] = r.parameter_bytes;
  d["optimizer_state_bytes"] = r.optimizer_state_bytes;
  d["buffer_bytes"] = r.buffer_bytes;
  d["undo_bytes"] = r.undo_bytes;
  d["boxing_bytes"] = r.boxing_bytes;
  d["bucket_bytes"] = r.bucket_bytes;
  d["register_bytes"] = r.register_bytes;
  return d;
}

void SavePlanned(const PyPlanned& p, const std::string& path) {
  proto::PlannedStrategyConf file;
  *file.mutable_strategy() = StrategyToConf(p.planned.strategy);
  file.set_searcher(p.planned.searcher);
  file.set_predicted_step_s(p.planned.solution.total_seconds);
  file.set_compute_s(p.planned.solution.compute_seconds);
  file.set_communication_s(p.planned.solution.transfer_seconds);
  file.set_memory_bytes(p.planned.solution.memory_bytes);
  Maybe<StrategyReport> report = ReportPlanned(*p.graph, p.planned);
  if (report.ok()) file.set_report(report.value().ToText(/*full=*/false, /*max_rows=*/20));
  ThrowIfError(SaveStrategyFile(path, file));
}

// Figures: predicted step, bytes, stats, the chosen candidates.
void BindPlannedFigures(py::class_<PyPlanned>& c) {
  c.def_property_readonly(
       "step_estimate",
       [](const PyPlanned& p) { return StepEstimateDict(Unwrap(EstimatePlannedStep(p.planned))); },
       "the full model of the chosen plan: gradient buckets in order of readiness, "
       "overlapped with backward (graph/cost_model_buckets.h)")
      .def_property_readonly("searcher", [](const PyPlanned& p) { return p.planned.searcher; })
      .def_property_readonly(
          "strategy", [](const PyPlanned& p) { return p.planned.strategy; },
          "the chosen Strategy (typed; a session runs it as it is)")
      .def_property_readonly("placement",
                             [](const PyPlanned& p) { return p.planned.strategy.placement(); })
      .def_property_readonly("predicted_step_s",
                             [](const PyPlanned& p) { return p.planned.solution.total_seconds; })
      .def_property_readonly(
          "predicted_bytes",
          [](const PyPlanned& p) {
            return Unwrap(PredictedBytesSent(p.planned, *p.graph,
                                             DistributedOptions{}.gradient_bucket_bytes));
          },
          "per rank, the bytes a DistributedSession with its default "
          "gradient buckets sends in one step")
      .def(
          "predicted_bytes_with_buckets",
          [](const PyPlanned& p, int64_t gradient_bucket_bytes) {
            return Unwrap(PredictedBytesSent(p.planned, *p.graph, gradient_bucket_bytes));
          },
          py::arg("gradient_bucket_bytes"),
          "per rank, the bytes sent in one step by a session with these gradient buckets "
          "(0: none)")
      .def_property_readonly("stats", [](const PyPlanned& p) { return StatsDict(p.planned); })
      .def_property_readonly(
          "choice", [](const PyPlanned& p) { return p.planned.solution.choice; },
          "the chosen candidate per node of the cost graph (CostModel.cost_graph())");
}

// Memory, report, diff, text and save.
void BindPlannedReports(py::class_<PyPlanned>& c) {
  c.def(
       "predicted_memory",
       [](const PyPlanned& p, const std::vector<std::string>& fetches, int64_t num_slots,
          const std::optional<int64_t>& micro_batches, int64_t gradient_bucket_bytes,
          bool transactional) {
         DistributedOptions o;
         o.num_slots = num_slots;
         o.micro_batches =
             micro_batches ? *micro_batches : p.planned.model->options().micro_batches;
         o.gradient_bucket_bytes = gradient_bucket_bytes;
         o.transactional = transactional;
         Maybe<MemoryEstimate> m = MemoryEstimate{};
         {
           py::gil_scoped_release release;
           m = PredictPlannedMemory(*p.graph, p.planned, fetches, o);
         }
         return Unwrap(std::move(m));
       },
       py::arg("fetches") = std::vector<std::string>{}, py::arg("num_slots") = 2,
       py::arg("micro_batches") = py::none(),
       py::arg("gradient_bucket_bytes") = DistributedOptions{}.gradient_bucket_bytes,
       py::arg("transactional") = true,
       "the peak bytes per rank a DistributedSession with these arguments (its defaults; "
       "micro_batches: the plan's) has its allocators count (session.peak_bytes()): the "
       "runtime's register arena by liveness, every buffer kept apart, the undo copy "
       "(oneflow_lite/api/memory_estimate.h). stats['memory_bytes'] is the searchers' "
       "additive proxy, not this")
      .def(
          "report",
          [](const PyPlanned& p, bool full, int max_rows, const MemoryEstimate* memory) {
            return SimulatedReport(p, memory).ToText(full, max_rows);
          },
          py::arg("full") = false, py::arg("max_rows") = 20, py::arg("memory") = py::none(),
          "memory: predicted_memory(...)'s answer, shown as the predicted peak")
      .def(
          "report_json",
          [](const PyPlanned& p, const MemoryEstimate* memory) {
            return SimulatedReport(p, memory).ToJson();
          },
          py::arg("memory") = py::none())
      .def(
          "diff",
          [](const PyPlanned& p, const PyPlanned& other) {
            return Unwrap(DiffPlanned(p.planned, other.planned));
          },
          py::arg("other"), "what changes from this strategy to `other` (same graph)")
      .def("strategy_text",
           [](const PyPlanned& p) { return p.planned.strategy.ToString(*p.graph); })
      .def("save", &SavePlanned, py::arg("path"),
           "writes the strategy with its searcher, predicted figures and report (protobuf "
           "JSON, core/proto/strategy.proto); _C.load_strategy reads it back")
      .def("__str__", [](const PyPlanned& p) { return p.planned.strategy.ToString(*p.graph); });
}

}  // namespace

void BindPlanned(py::module_& m) {
  py::class_<StrategyDiff>(m, "StrategyDiff")
      .def_property_readonly("delta_s", &StrategyDiff::delta)
      .def_readonly("before_s", &StrategyDiff::before_seconds)
      .def_readonly("after_s", &StrategyDiff::after_seconds)
      .def("num_changed_nodes", [](const StrategyDiff& d) { return d.nodes.size(); })
      .def("num_changed_edges", [](const StrategyDiff& d) { return d.edges.size(); })
      .def("to_text", &StrategyDiff::ToText, py::arg("full") = false, py::arg("max_rows") = 20)
      .def("to_json", &StrategyDiff::ToJson)
      .def("__str__", [](const StrategyDiff& d) { return d.ToText(); });

  py::class_<MemoryEstimate>(m, "MemoryEstimate")
      .def_property_readonly("peak_bytes", &MemoryEstimate::PeakBytes, "per rank")
      .def_readonly("max_bytes", &MemoryEstimate::max_bytes)
      .def_readonly("busiest_rank", &MemoryEstimate::busiest_rank)
      .def_property_readonly(
          "ranks",
          [](const MemoryEstimate& e) {
            py::list out;
            for (const RankMemory& r : e.ranks) out.append(RankMemoryDict(r));
            return out;
          },
          "per rank: the breakdown (dicts)")
      .def("__str__", &MemoryEstimate::ToText);
  py::class_<PyPlanned> c(m, "PlannedStrategy");
  BindPlannedFigures(c);
  BindPlannedReports(c);
}

}  // namespace ofl::python
