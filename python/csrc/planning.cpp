// Binding of planning (api/planning.h, graph/auto_parallel.h): clusters
// (load, presets, calibration of this machine), plan(program, hierarchy,
// cluster, searcher, ...) -> PlannedStrategy with its report, per-rank
// bytes, stats, diff and save; load_strategy(path) reads a saved one back
// as the dict _C.DistributedSession(strategy=...) accepts ("manual").
// Declared-only variables: Program.add_variable_desc.
#include <pybind11/stl.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>

#include "convert.h"
#include "planned.h"
#include "oneflow_lite/api/calibrate.h"
#include "oneflow_lite/api/calibrate_processes.h"
#include "oneflow_lite/api/distributed_session.h"
#include "oneflow_lite/api/planning.h"
#include "oneflow_lite/api/session.h"

namespace ofl::python {
namespace {

Cluster ClusterFrom(const py::object& cluster) {
  if (py::isinstance<Cluster>(cluster)) return cluster.cast<Cluster>();
  if (py::isinstance<py::str>(cluster)) return Unwrap(FindCluster(cluster.cast<std::string>()));
  throw py::type_error("cluster must be a Cluster, a preset name or a file path");
}

py::dict StrategyDict(const Strategy& strategy) {
  StrategyText text = ToStrategyText(strategy);
  py::dict d;
  d["kind"] = "manual";
  d["sources"] = text.sources;
  d["signatures"] = text.signatures;
  return d;
}

py::dict StatsDict(const PlannedStrategy& p) {
  const PlanStats& s = p.stats;
  py::dict d;
  d["searcher"] = p.searcher;
  d["ops"] = s.ops;
  d["cost_nodes"] = s.cost_nodes;
  d["cost_edges"] = s.cost_edges;
  d["candidates"] = s.mean_candidates;          // per cost node
  d["op_candidates"] = s.mean_op_candidates;    // signatures per op (folded updates included)
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

// A cost model with the graph it was built for, reusable across searchers.
struct PyModel {
  std::shared_ptr<const OpGraph> graph;
  std::shared_ptr<const CostModel> model;
};

PyPlanned Plan(const Program& program, const std::vector<int64_t>& hierarchy,
               const py::object& cluster_arg, const PlanRequest& request,
               const std::optional<std::vector<int64_t>>& ranks_arg) {
  Cluster cluster = ClusterFrom(cluster_arg);
  Placement placement = Unwrap(MeshPlacement(hierarchy, ranks_arg));
  auto graph = std::make_shared<const OpGraph>(program.graph());
  Maybe<PlannedStrategy> planned = PlannedStrategy{};
  {
    py::gil_scoped_release release;
    planned = PlanRequested(*graph, placement, cluster, request);
  }
  return PyPlanned{graph, Unwrap(std::move(planned))};
}

// The cost graph as searched, before any pruning: per node its candidates'
// compute seconds and memory bytes, per edge its matrix (rows: `from`'s
// candidates; parallel edges add up), the per-device memory limit (None: none).
py::dict CostGraphDict(const CostGraph& g) {
  py::list nodes, edges;
  for (int u = 0; u < g.num_nodes(); ++u) {
    py::list compute, memory;
    for (const Candidate& c : g.node(u).candidates) {
      compute.append(c.compute_seconds);
      memory.append(c.memory_bytes);
    }
    py::dict node;
    node["name"] = g.node(u).name;
    node["compute_s"] = compute;
    node["memory_bytes"] = memory;
    nodes.append(node);
  }
  for (int e = 0; e < g.num_edges(); ++e) {
    const CostEdge& edge = g.edge(e);
    py::list rows;
    const EdgeMatrix& m = *edge.matrix;
    for (int r = 0; r < m.rows(); ++r) {
      rows.append(std::vector<double>(m.row(r), m.row(r) + m.cols()));
    }
    py::dict d;
    d["from"] = edge.from;
    d["to"] = edge.to;
    d["seconds"] = rows;
    edges.append(d);
  }
  py::dict d;
  d["nodes"] = nodes;
  d["edges"] = edges;
  d["memory_limit"] = g.memory_limit() == kNoMemoryLimit ? py::object(py::none())
                                                         : py::object(py::int_(g.memory_limit()));
  return d;
}

std::string ReadFile(const std::string& what, const std::string& path) {
  std::error_code error;
  if (std::filesystem::is_directory(path, error)) {
    throw py::value_error(what + " '" + path + "' is a directory, not a file");
  }
  std::ifstream in(path);
  if (!in.good()) throw py::value_error("cannot open " + what + " '" + path + "' for reading");
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// A CollectiveFigure from {kind, bandwidth_gbps, latency_us}.
proto::CollectiveFigure FigureFromDict(const std::map<std::string, py::object>& figure) {
  proto::CollectiveFigure f;
  try {
    f.set_kind(figure.at("kind").cast<std::string>());
    f.set_bandwidth_gbps(figure.at("bandwidth_gbps").cast<double>());
    f.set_latency_us(figure.at("latency_us").cast<double>());
  } catch (const std::exception&) {
    throw py::value_error(
        "calibrate: each collective figure needs kind, bandwidth_gbps and latency_us");
  }
  return f;
}

}  // namespace

void BindPlanning(py::module_& m) {
  using namespace pybind11::literals;
  // Declared-only variables (a desc, no value) for planning models too large to hold.
  py::reinterpret_borrow<py::class_<Program>>(m.attr("Program"))
      .def("add_variable_desc",
           [](Program& p, const std::string& name, const std::vector<int64_t>& shape,
              const std::string& dtype, bool trainable) {
             ThrowIfError(p.graph().AddVariable(
                 name, TensorDesc{Shape(shape), Unwrap(ParseDataType(dtype))}, trainable));
           },
           py::arg("name"), py::arg("shape"), py::arg("dtype") = "float32",
           py::arg("trainable") = true,
           "declares a variable by shape and dtype only (planning; a session reports it)");
  py::class_<Cluster>(m, "Cluster")
      .def_property_readonly("name", &Cluster::name)
      .def_property_readonly("memory_bytes", &Cluster::memory_bytes)
      .def("flops", [](const Cluster& c, const std::string& dtype) {
        return Unwrap(c.Flops(Unwrap(ParseDataType(dtype))));
      })
      .def("levels",
           [](const Cluster& c) {
             py::list out;
             for (int i = 0; i < c.num_levels(); ++i) {
               const LinkLevel& l = c.level(i);
               py::dict d;
               d["name"] = l.name;
               d["size"] = l.size;
               d["bandwidth_bytes_per_s"] = l.bandwidth_bytes_per_s;
               d["latency_s"] = l.latency_s;
               out.append(d);
             }
             return out;
           })
      .def(
          "compute_seconds",
          [](const Cluster& c, const std::string& op_type, const std::string& dtype,
             double flops) {
            return c.compute_table().Seconds(op_type, Unwrap(ParseDataType(dtype)), flops);
          },
          py::arg("op_type"), py::arg("dtype"), py::arg("flops"),
          "the measured kernel seconds interpolated at `flops` (None: not in the table)")
      .def("compute_table_op_types",
           [](const Cluster& c) { return c.compute_table().OpTypes(); })
      .def("contention", [](const Cluster& c, int64_t devices) {
        return c.compute_table().Contention(devices);
      }, py::arg("devices"))
      .def("save", [](const Cluster& c, const std::string& path) { ThrowIfError(c.Save(path)); })
      .def("__str__", &Cluster::ToText);
  m.def("load_cluster", [](const std::string& path) { return Unwrap(LoadCluster(path)); },
        py::arg("path"));
  m.def("preset_cluster", [](const std::string& name) { return Unwrap(PresetCluster(name)); },
        py::arg("name"));
  m.def("cluster_presets", &ClusterPresets);
  m.def("searchers", &PlanSearchers);
  m.def(
      "calibrate",
      [](int64_t devices, int num_threads, int64_t memcpy_bytes, int64_t matmul_size,
         int64_t allreduce_bytes, int reps, const std::string& name, bool per_collective,
         const std::vector<const Program*>& kernel_probes, int64_t contention_devices,
         const std::vector<std::map<std::string, py::object>>& collectives,
         const std::string& collectives_source,
         const std::vector<std::map<std::string, py::object>>& levels, bool inprocess_level,
         const std::string& levels_source, const py::object& progress) {
        CalibrationOptions o;
        if (!progress.is_none()) {
          o.progress = [progress](const std::string& what, int done, int total) {
            py::gil_scoped_acquire gil;
            try {
              progress(what, done, total);
            } catch (py::error_already_set&) {  // a display must not stop the measurement
            }
          };
        }
        for (const auto& figure : collectives) o.collectives.push_back(FigureFromDict(figure));
        o.collectives_source = collectives_source;
        for (const auto& level : levels) {
          proto::LinkLevel l;
          try {
            l.set_name(level.at("name").cast<std::string>());
            l.set_size(level.at("size").cast<int64_t>());
            l.set_bandwidth_gbps(level.at("bandwidth_gbps").cast<double>());
            l.set_latency_us(level.at("latency_us").cast<double>());
            for (const auto& figure :
                 level.at("collectives").cast<std::vector<std::map<std::string, py::object>>>()) {
              *l.add_collectives() = FigureFromDict(figure);
            }
          } catch (const std::out_of_range&) {
            throw py::value_error("calibrate: each of levels needs name, size, bandwidth_gbps, "
                                  "latency_us and collectives");
          }
          o.levels.push_back(std::move(l));
        }
        o.inprocess_level = inprocess_level;
        o.levels_source = levels_source;
        o.per_collective = per_collective;
        o.contention_devices = contention_devices;
        for (const Program* probe : kernel_probes) {
          if (probe == nullptr) throw py::value_error("calibrate: kernel_probes holds None");
          o.kernel_probes.push_back(&probe->graph());
        }
        o.devices = devices;
        o.num_threads = num_threads;
        o.memcpy_bytes = memcpy_bytes;
        o.matmul_size = matmul_size;
        o.allreduce_bytes = allreduce_bytes;
        o.reps = reps;
        o.name = name;
        Maybe<Calibration> c = Calibration{};
        {
          py::gil_scoped_release release;
          c = Calibrate(o);
        }
        Calibration cal = Unwrap(std::move(c));
        py::dict d;
        d["memcpy_gbps"] = cal.memcpy_gbps;
        d["matmul_flops"] = cal.matmul_flops;
        d["allreduce_seconds"] = cal.allreduce_seconds;
        d["allreduce_bytes_sent"] = cal.allreduce_bytes_sent;
        d["latency_seconds"] = cal.latency_seconds;
        d["bandwidth_bytes_per_s"] = cal.bandwidth_bytes_per_s;
        d["memory_bytes"] = cal.memory_bytes;
        d["measured_at"] = cal.measured_at;
        d["compute_entries"] = cal.compute_entries;
        d["contention"] = cal.contention;
        d["text"] = cal.ToText();
        return py::make_tuple(*cal.cluster, d);
      },
      py::arg("devices") = 2, py::arg("num_threads") = 1, py::arg("memcpy_bytes") = 64 << 20,
      py::arg("matmul_size") = 512, py::arg("allreduce_bytes") = 16 << 20, py::arg("reps") = 5,
      py::arg("name") = "local", py::arg("per_collective") = true,
      py::arg("kernel_probes") = std::vector<const Program*>{},
      py::arg("contention_devices") = 0,
      py::arg("collectives") = std::vector<std::map<std::string, py::object>>{},
      py::arg("collectives_source") = "",
      py::arg("levels") = std::vector<std::map<std::string, py::object>>{},
      py::arg("inprocess_level") = true, py::arg("levels_source") = "",
      py::arg("progress") = py::none(),
      "Measures this machine; returns (Cluster, figures dict whose 'text' is the file form). "
      "progress(what, done, total), when given, is called after each measurement. "
      "kernel_probes: Programs whose ops' kernel times (one device, then 2..contention_devices "
      "at once) make the compute table and contention factors (api/calibrate.h)");

  m.def(
      "calibrate_process_levels",
      [](const std::vector<int64_t>& sizes, int reps) {
        Maybe<std::vector<LevelCollective>> measured = std::vector<LevelCollective>{};
        {
          py::gil_scoped_release release;
          measured = CalibrateProcessLevels(sizes, reps);
        }
        py::list out;
        for (const LevelCollective& r : Unwrap(std::move(measured))) {
          py::dict d;
          d["level"] = r.level;
          d["processes"] = r.processes;
          d["kind"] = KindName(r);
          d["bandwidth_gbps"] = r.figure.bandwidth_bytes_per_s / 1e9;
          d["latency_us"] = r.figure.latency_s * 1e6;
          py::list points;
          for (const CollectivePoint& p : r.points) {
            points.append(py::make_tuple(p.buffer_bytes, p.bytes_sent, p.seconds));
          }
          d["points"] = points;
          out.append(d);
        }
        return out;
      },
      py::arg("sizes"), py::arg("reps") = 5,
      "Every process of a launched job calls it at once: each collective's latency and "
      "bandwidth on each level of the processes (node, network) over Gloo, fitted through "
      "every size; points are (buffer bytes, bytes sent, seconds) (api/calibrate_processes.h)");

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
      .def_property_readonly("ranks",
                             [](const MemoryEstimate& e) {
                               py::list out;
                               for (const RankMemory& r : e.ranks) out.append(RankMemoryDict(r));
                               return out;
                             },
                             "per rank: the breakdown (dicts)")
      .def("__str__", &MemoryEstimate::ToText);
  py::class_<PyPlanned>(m, "PlannedStrategy")
      .def_property_readonly(
          "step_estimate",
          [](const PyPlanned& p) {
            return StepEstimateDict(Unwrap(EstimatePlannedStep(p.planned)));
          },
          "the full model of the chosen plan: gradient buckets in order of readiness, "
          "overlapped with backward (graph/cost_model_buckets.h)")
      .def_property_readonly("searcher", [](const PyPlanned& p) { return p.planned.searcher; })
      .def_property_readonly("strategy",
                             [](const PyPlanned& p) { return StrategyDict(p.planned.strategy); })
      .def_property_readonly("predicted_step_s",
                             [](const PyPlanned& p) { return p.planned.solution.total_seconds; })
      .def_property_readonly("predicted_bytes",
                             [](const PyPlanned& p) {
                               return Unwrap(PredictedBytesSent(
                                   p.planned, *p.graph, DistributedOptions{}.gradient_bucket_bytes));
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
          "the chosen candidate per node of the cost graph (CostModel.cost_graph())")
      .def(
          "predicted_memory",
          [](const PyPlanned& p, const std::vector<std::string>& fetches, int64_t num_slots,
             const std::optional<int64_t>& micro_batches, int64_t gradient_bucket_bytes,
             bool transactional) {
            DistributedOptions o;
            o.num_slots = num_slots;
            o.micro_batches = micro_batches ? *micro_batches
                                            : p.planned.model->options().micro_batches;
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
      .def("report",
           [](const PyPlanned& p, bool full, int max_rows, const MemoryEstimate* memory) {
             return SimulatedReport(p, memory).ToText(full, max_rows);
           },
           py::arg("full") = false, py::arg("max_rows") = 20, py::arg("memory") = py::none(),
           "memory: predicted_memory(...)'s answer, shown as the predicted peak")
      .def("report_json",
           [](const PyPlanned& p, const MemoryEstimate* memory) {
             return SimulatedReport(p, memory).ToJson();
           },
           py::arg("memory") = py::none())
      .def("diff",
           [](const PyPlanned& p, const PyPlanned& other) {
             return Unwrap(DiffPlanned(p.planned, other.planned));
           },
           py::arg("other"), "what changes from this strategy to `other` (same graph)")
      .def("strategy_text",
           [](const PyPlanned& p) { return p.planned.strategy.ToString(*p.graph); })
      .def("save",
           [](const PyPlanned& p, const std::string& path) {
             py::dict d = StrategyDict(p.planned.strategy);
             d["searcher"] = p.planned.searcher;
             d["placement"] = p.planned.strategy.placement().ToString();
             d["predicted_step_s"] = p.planned.solution.total_seconds;
             std::string text = py::module_::import("json").attr("dumps")(d, "indent"_a = 1)
                                    .cast<std::string>();
             std::ofstream out(path);
             if (!out.good()) throw py::value_error("cannot open '" + path + "' for writing");
             out << text << "\n";
           },
           py::arg("path"), "writes the strategy as JSON (the 'manual' dict plus its origin)")
      .def("__str__", [](const PyPlanned& p) { return p.planned.strategy.ToString(*p.graph); });

  m.def(
      "plan",
      [](const Program& program, const std::vector<int64_t>& hierarchy, const py::object& cluster,
         const std::string& searcher, const std::map<std::string, std::string>& pinned,
         int64_t micro_batches, const std::optional<std::string>& compute_dtype,
         const std::optional<double>& bytes_per_parameter,
         const std::optional<int64_t>& memory_limit,
         const std::optional<std::vector<int64_t>>& ranks,
         const std::optional<double>& exact_time_budget_s,
         const std::optional<int64_t>& exact_max_table_entries, int autoddl_random_starts,
         const std::optional<double>& optimality_cap_s,
         const std::optional<int64_t>& gradient_bucket_bytes, bool overlap_gradients) {
        PlanRequest a{searcher, pinned, micro_batches, compute_dtype, bytes_per_parameter,
                      memory_limit, exact_time_budget_s, exact_max_table_entries,
                      autoddl_random_starts, /*exact_starts_from_autoddl=*/true,
                      optimality_cap_s, gradient_bucket_bytes, overlap_gradients};
        return Plan(program, hierarchy, cluster, a, ranks);
      },
      py::arg("program"), py::arg("hierarchy"), py::arg("cluster"),
      py::arg("searcher") = "autoddl",
      py::arg("pinned") = std::map<std::string, std::string>{}, py::arg("micro_batches") = 1,
      py::arg("compute_dtype") = py::none(), py::arg("bytes_per_parameter") = py::none(),
      py::arg("memory_limit") = py::none(), py::arg("ranks") = py::none(),
      py::arg("exact_time_budget_s") = py::none(), py::arg("exact_max_table_entries") = py::none(),
      py::arg("autoddl_random_starts") = 0, py::arg("optimality_cap_s") = py::none(),
      py::arg("gradient_bucket_bytes") = py::none(), py::arg("overlap_gradients") = true,
      "Plans a strategy for `program` on a mesh `hierarchy` of `cluster` (a Cluster, a preset "
      "name or a file). memory_limit: bytes per device, None = the cluster's, -1 = none. "
      "gradient_bucket_bytes: gradient collectives fuse into buckets of this size (None: "
      "25 MiB, 0: none); overlap_gradients: they overlap the rest of backward. "
      "optimality_cap_s: exact then runs from the plan for at most that long and "
      "stats['optimality'] (and the report) give its distance to the optimum or a bound.");

  py::class_<PyModel>(m, "CostModel")
      .def_property_readonly("build_seconds",
                             [](const PyModel& p) { return p.model->stats().build_seconds; })
      .def_property_readonly("num_nodes",
                             [](const PyModel& p) { return p.model->graph().num_nodes(); })
      .def_property_readonly("num_edges",
                             [](const PyModel& p) { return p.model->graph().num_edges(); })
      .def_property_readonly("smallest_memory_need_bytes",
                             [](const PyModel& p) { return p.model->graph().SmallestMemoryNeed(); })
      .def("cost_graph", [](const PyModel& p) { return CostGraphDict(p.model->graph()); },
           "the cost graph as the searchers get it, before pruning: {'nodes': [{'name', "
           "'compute_s', 'memory_bytes'}], 'edges': [{'from', 'to', 'seconds' (rows: from's "
           "candidates)}], 'memory_limit' (bytes per device or None)}")
      .def("plan",
           [](const PyModel& p, const std::string& searcher,
              const std::map<std::string, std::string>& pinned,
              const std::optional<double>& exact_time_budget_s,
              const std::optional<int64_t>& exact_max_table_entries, int autoddl_random_starts,
              bool exact_starts_from_autoddl, const std::optional<double>& optimality_cap_s) {
             PlanRequest a;
             a.searcher = searcher;
             a.exact_starts_from_autoddl = exact_starts_from_autoddl;
             a.optimality_cap = optimality_cap_s;
             a.pinned = pinned;
             a.exact_time_budget = exact_time_budget_s;
             a.exact_max_table_entries = exact_max_table_entries;
             a.autoddl_random_starts = autoddl_random_starts;
             Maybe<PlannedStrategy> planned = PlannedStrategy{};
             {
               py::gil_scoped_release release;
               planned = PlanOnModel(*p.graph, p.model, a);
             }
             return PyPlanned{p.graph, Unwrap(std::move(planned))};
           },
           py::arg("searcher") = "autoddl",
           py::arg("pinned") = std::map<std::string, std::string>{},
           py::arg("exact_time_budget_s") = py::none(),
           py::arg("exact_max_table_entries") = py::none(), py::arg("autoddl_random_starts") = 0,
           py::arg("exact_starts_from_autoddl") = true, py::arg("optimality_cap_s") = py::none(),
           "plans on this model (built once, reused across searchers); stats['seconds'] "
           "includes the model's build time. exact_starts_from_autoddl=False: exact's "
           "unproved answer comes from its own plain descent (for comparison)");
  m.def(
      "build_cost_model",
      [](const Program& program, const std::vector<int64_t>& hierarchy, const py::object& cluster_arg,
         int64_t micro_batches, const std::optional<std::string>& compute_dtype,
         const std::optional<double>& bytes_per_parameter,
         const std::optional<int64_t>& memory_limit,
         const std::optional<std::vector<int64_t>>& ranks,
         const std::optional<int64_t>& gradient_bucket_bytes, bool overlap_gradients) {
        PlanRequest a;
        a.gradient_bucket_bytes = gradient_bucket_bytes;
        a.overlap_gradients = overlap_gradients;
        a.micro_batches = micro_batches;
        a.compute_dtype = compute_dtype;
        a.bytes_per_parameter = bytes_per_parameter;
        a.memory_limit = memory_limit;
        Cluster cluster = ClusterFrom(cluster_arg);
        Placement placement = Unwrap(MeshPlacement(hierarchy, ranks));
        auto graph = std::make_shared<const OpGraph>(program.graph());
        Maybe<std::shared_ptr<const CostModel>> model = std::shared_ptr<const CostModel>();
        {
          py::gil_scoped_release release;
          model = BuildPlanModel(*graph, placement, cluster, a);
        }
        return PyModel{graph, Unwrap(std::move(model))};
      },
      py::arg("program"), py::arg("hierarchy"), py::arg("cluster"), py::arg("micro_batches") = 1,
      py::arg("compute_dtype") = py::none(), py::arg("bytes_per_parameter") = py::none(),
      py::arg("memory_limit") = py::none(), py::arg("ranks") = py::none(),
      py::arg("gradient_bucket_bytes") = py::none(), py::arg("overlap_gradients") = true,
      "builds the cost model once, to plan with several searchers (CostModel.plan); "
      "gradient_bucket_bytes and overlap_gradients as in plan()");
  m.def(
      "load_strategy",
      [](const std::string& path) {
        const std::string text = ReadFile("strategy file", path);
        py::object parsed;
        try {  // UnicodeDecodeError and JSONDecodeError are both ValueErrors
          parsed = py::module_::import("json").attr("loads")(py::bytes(text));
        } catch (py::error_already_set& e) {
          if (!e.matches(PyExc_ValueError)) throw;
          throw py::value_error("strategy file '" + path + "' is not JSON: " +
                                std::string(py::str(e.value())));
        }
        if (!py::isinstance<py::dict>(parsed)) {
          const std::string type_name = py::str(py::type::handle_of(parsed).attr("__name__"));
          throw py::value_error("strategy file '" + path + "' holds a JSON " + type_name +
                                ", not an object with kind and signatures (write one with "
                                "nn.Graph.save_strategy)");
        }
        py::dict d = parsed;
        if (!d.contains("kind") || !d.contains("signatures")) {
          throw py::value_error("strategy file '" + path +
                                "' is not a saved strategy (no kind/signatures)");
        }
        return d;
      },
      py::arg("path"), "a saved strategy as the dict DistributedSession(strategy=...) accepts");
}

}  // namespace ofl::python
