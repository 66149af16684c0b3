// Binding of planning (api/planning.h, api/compile.h): plan(program,
// placement or hierarchy, cluster, searcher, ...) -> PlannedStrategy (bound
// in planned.cpp), PlanSpec.search (compile's searching spec), the searcher
// names, and the parts bound in their own files: clusters and calibration
// (clusters.cpp), typed strategies (strategy_types.cpp), cost models
// (cost_model.cpp). Declared-only variables: Program.add_variable_desc.
#include "oneflow_lite/api/planning.h"

#include <pybind11/stl.h>

#include <algorithm>
#include <memory>

#include "convert.h"
#include "oneflow_lite/api/compile.h"
#include "oneflow_lite/api/session.h"
#include "planned.h"
#include "strategy_types.h"

namespace ofl::python {

void BindClusters(py::module_& m);  // clusters.cpp

Cluster ClusterFrom(const py::object& cluster) {
  if (py::isinstance<Cluster>(cluster)) return cluster.cast<Cluster>();
  if (py::isinstance<py::str>(cluster)) return Unwrap(FindCluster(cluster.cast<std::string>()));
  throw py::type_error("cluster must be a Cluster, a preset name or a file path");
}

Placement MeshOf(const py::object& placement_or_hierarchy,
                 const std::optional<std::vector<int64_t>>& ranks) {
  if (py::isinstance<Placement>(placement_or_hierarchy)) {
    return placement_or_hierarchy.cast<Placement>();
  }
  return Unwrap(MeshPlacement(placement_or_hierarchy.cast<std::vector<int64_t>>(), ranks));
}

namespace {

PyPlanned Plan(const Program& program, const Placement& placement, const py::object& cluster_arg,
               const PlanRequest& request) {
  Cluster cluster = ClusterFrom(cluster_arg);
  auto graph = std::make_shared<const OpGraph>(program.graph());
  Maybe<PlannedStrategy> planned = PlannedStrategy{};
  {
    py::gil_scoped_release release;
    planned = PlanRequested(*graph, placement, cluster, request);
  }
  return PyPlanned{graph, Unwrap(std::move(planned))};
}

void BindPlan(py::module_& m) {
  m.def(
      "plan",
      [](const Program& program, const py::object& hierarchy, const py::object& cluster,
         const std::string& searcher, const std::map<std::string, std::string>& pinned,
         int64_t micro_batches, const std::optional<std::string>& compute_dtype,
         const std::optional<double>& bytes_per_parameter,
         const std::optional<int64_t>& memory_limit,
         const std::optional<std::vector<int64_t>>& ranks,
         const std::optional<double>& exact_time_budget_s,
         const std::optional<int64_t>& exact_max_table_entries, int autoddl_random_starts,
         const std::optional<double>& optimality_cap_s,
         const std::optional<int64_t>& gradient_bucket_bytes, bool overlap_gradients) {
        PlanRequest a{searcher,
                      pinned,
                      micro_batches,
                      compute_dtype,
                      bytes_per_parameter,
                      memory_limit,
                      exact_time_budget_s,
                      exact_max_table_entries,
                      autoddl_random_starts,
                      /*exact_starts_from_autoddl=*/true,
                      optimality_cap_s,
                      gradient_bucket_bytes,
                      overlap_gradients};
        return Plan(program, MeshOf(hierarchy, ranks), cluster, a);
      },
      py::arg("program"), py::arg("hierarchy"), py::arg("cluster"), py::arg("searcher") = "autoddl",
      py::arg("pinned") = std::map<std::string, std::string>{}, py::arg("micro_batches") = 1,
      py::arg("compute_dtype") = py::none(), py::arg("bytes_per_parameter") = py::none(),
      py::arg("memory_limit") = py::none(), py::arg("ranks") = py::none(),
      py::arg("exact_time_budget_s") = py::none(), py::arg("exact_max_table_entries") = py::none(),
      py::arg("autoddl_random_starts") = 0, py::arg("optimality_cap_s") = py::none(),
      py::arg("gradient_bucket_bytes") = py::none(), py::arg("overlap_gradients") = true,
      "Plans a strategy for `program` on a mesh `hierarchy` (or a Placement) of `cluster` (a "
      "Cluster, a preset name or a file). memory_limit: bytes per device, None = the cluster's, -1 "
      "= none. "
      "gradient_bucket_bytes: gradient collectives fuse into buckets of this size (None: "
      "25 MiB, 0: none); overlap_gradients: they overlap the rest of backward. "
      "optimality_cap_s: exact then runs from the plan for at most that long and "
      "stats['optimality'] (and the report) give its distance to the optimum or a bound.");
}

void BindSearchSpec(py::module_& m) {
  py::reinterpret_borrow<py::class_<PlanSpec>>(m.attr("PlanSpec"))
      .def_static(
          "search",
          [](const py::object& cluster, const std::string& searcher,
             const std::map<std::string, std::string>& pinned,
             const std::optional<int64_t>& memory_limit,
             const std::optional<double>& optimality_cap_s,
             const std::vector<std::string>& simulate_candidates) {
            PlanRequest r;
            r.searcher = searcher;
            r.pinned = pinned;
            r.memory_limit = memory_limit;
            r.optimality_cap = optimality_cap_s;
            ThrowIfError(PlanOptionsFrom(r).status());  // a bad request fails here, named
            const std::vector<std::string> known = PlanSearchers();
            for (const std::string& c : simulate_candidates) {
              if (std::find(known.begin(), known.end(), c) == known.end()) {
                std::string names;
                for (const std::string& k : known) names += (names.empty() ? "" : ", ") + k;
                throw py::value_error("PlanSpec.search: simulate_candidates names '" + c +
                                      "', which is not a registered searcher (" + names + ")");
              }
            }
            PlanSpec spec = PlanSpec::Search(std::move(r), ClusterFrom(cluster));
            spec.simulate_candidates = simulate_candidates;
            return spec;
          },
          py::arg("cluster"), py::arg("searcher") = "autoddl",
          py::arg("pinned") = std::map<std::string, std::string>{},
          py::arg("memory_limit") = py::none(), py::arg("optimality_cap_s") = py::none(),
          py::arg("simulate_candidates") = std::vector<std::string>{},
          "search with `searcher` on `cluster` (a Cluster, a preset name or a file); the "
          "arguments as plan()'s, micro_batches compile's. simulate_candidates (searcher "
          "names, e.g. the presets): the searcher's answer and these are each simulated as "
          "the session would run them and the shortest simulated step is chosen");
}

}  // namespace

void BindPlanning(py::module_& m) {
  py::reinterpret_borrow<py::class_<Program>>(m.attr("Program"))
      .def(
          "add_variable_desc",
          [](Program& p, const std::string& name, const std::vector<int64_t>& shape,
             const std::string& dtype, bool trainable) {
            ThrowIfError(p.graph().AddVariable(
                name, TensorDesc{Shape(shape), Unwrap(ParseDataType(dtype))}, trainable));
          },
          py::arg("name"), py::arg("shape"), py::arg("dtype") = "float32",
          py::arg("trainable") = true,
          "declares a variable by shape and dtype only (planning; a session reports it)");
  BindClusters(m);
  m.def("searchers", &PlanSearchers);
  BindStrategyTypes(m);
  BindSearchSpec(m);
  BindPlanned(m);
  BindPlan(m);
  BindCostModel(m);
}

}  // namespace ofl::python
