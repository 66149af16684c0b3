// Binding of a cost model built once for a graph and a placement, to plan
// on with several searchers (CostModel.plan), and its cost graph as the
// searchers get it (nodes' candidates, edges' matrices) as dicts.
#include <pybind11/stl.h>

#include "convert.h"
#include "planned.h"

namespace ofl::python {
namespace {

// A cost model with the graph it was built for, reusable across searchers.
struct PyModel {
  std::shared_ptr<const OpGraph> graph;
  std::shared_ptr<const CostModel> model;
};

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

void BindCostModelClass(py::module_& m) {
  py::class_<PyModel>(m, "CostModel")
      .def_property_readonly("build_seconds",
                             [](const PyModel& p) { return p.model->stats().build_seconds; })
      .def_property_readonly("num_nodes",
                             [](const PyModel& p) { return p.model->graph().num_nodes(); })
      .def_property_readonly("num_edges",
                             [](const PyModel& p) { return p.model->graph().num_edges(); })
      .def_property_readonly("smallest_memory_need_bytes",
                             [](const PyModel& p) { return p.model->graph().SmallestMemoryNeed(); })
      .def(
          "cost_graph", [](const PyModel& p) { return CostGraphDict(p.model->graph()); },
          "the cost graph as the searchers get it, before pruning: {'nodes': [{'name', "
          "'compute_s', 'memory_bytes'}], 'edges': [{'from', 'to', 'seconds' (rows: from's "
          "candidates)}], 'memory_limit' (bytes per device or None)}")
      .def(
          "plan",
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
          py::arg("searcher") = "autoddl", py::arg("pinned") = std::map<std::string, std::string>{},
          py::arg("exact_time_budget_s") = py::none(),
          py::arg("exact_max_table_entries") = py::none(), py::arg("autoddl_random_starts") = 0,
          py::arg("exact_starts_from_autoddl") = true, py::arg("optimality_cap_s") = py::none(),
          "plans on this model (built once, reused across searchers); stats['seconds'] "
          "includes the model's build time. exact_starts_from_autoddl=False: exact's "
          "unproved answer comes from its own plain descent (for comparison)");
}

}  // namespace

void BindCostModel(py::module_& m) {
  BindCostModelClass(m);
  m.def(
      "build_cost_model",
      [](const Program& program, const py::object& hierarchy, const py::object& cluster_arg,
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
        Placement placement = MeshOf(hierarchy, ranks);
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
}

}  // namespace ofl::python
