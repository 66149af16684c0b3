// Binding of the searcher registry (api/searchers.h): searcher_info() (name
// -> one-line description, in listing order), register_searcher(name, fn,
// description) and unregister_searcher(name). A Python searcher is a callable
// fn(problem) -> one candidate index per node, where problem is a dict:
// {"searcher", "nodes": [{"name", "kind", "layouts", "compute_s",
// "memory_bytes", "allowed"}], "edges": [{"from", "to", "tensor", "seconds"
// (rows: from's candidates)}], "memory_limit" (bytes per device or None)}.
// It runs with the GIL taken on the planning thread.
#include "oneflow_lite/api/searchers.h"

#include <pybind11/stl.h>

#include <limits>
#include <memory>

#include "convert.h"

namespace ofl::python {
namespace {

py::dict ProblemDict(const SearchProblem& p) {
  py::list nodes, edges;
  for (const SearchProblem::Node& n : p.nodes) {
    py::dict node;
    node["name"] = n.name;
    node["kind"] = n.kind;
    node["layouts"] = n.layouts;
    node["compute_s"] = n.compute_seconds;
    node["memory_bytes"] = n.memory_bytes;
    node["allowed"] = n.allowed;  // empty: every candidate
    nodes.append(node);
  }
  for (const SearchProblem::Edge& e : p.edges) {
    py::dict edge;
    edge["from"] = e.from;
    edge["to"] = e.to;
    edge["tensor"] = e.tensor;
    edge["seconds"] = e.seconds;
    edges.append(edge);
  }
  py::dict d;
  d["searcher"] = p.searcher;
  d["nodes"] = nodes;
  d["edges"] = edges;
  d["memory_limit"] = p.memory_limit_bytes == std::numeric_limits<int64_t>::max()
                          ? py::object(py::none())
                          : py::object(py::int_(p.memory_limit_bytes));
  return d;
}

// A Python callable as a SearchFunction. Calls take the GIL; the callable is
// dropped with the GIL held, or left alone once the interpreter has ended.
class PythonSearch {
 public:
  explicit PythonSearch(py::function fn) : fn_(std::move(fn)) {}
  PythonSearch(const PythonSearch&) = delete;
  PythonSearch& operator=(const PythonSearch&) = delete;
  ~PythonSearch() {
    if (Py_IsInitialized()) {
      py::gil_scoped_acquire gil;
      fn_ = py::function();
    } else {
      fn_.release();
    }
  }

  Maybe<std::vector<int>> operator()(const SearchProblem& problem) const {
    py::gil_scoped_acquire gil;
    try {
      return fn_(ProblemDict(problem)).cast<std::vector<int>>();
    } catch (py::error_already_set& e) {
      return InvalidArgument("searcher '", problem.searcher, "' raised ", e.what());
    } catch (py::cast_error&) {
      return InvalidArgument("searcher '", problem.searcher,
                             "' returned no sequence of candidate indices (ints)");
    }
  }

 private:
  py::function fn_;
};

}  // namespace

void BindSearchers(py::module_& m) {
  m.def(
      "searcher_info",
      [] {
        py::dict d;
        for (const SearcherDescription& s : ListSearchers()) d[py::str(s.name)] = s.description;
        return d;
      },
      "the registered searchers, in listing order: name -> one-line description");
  m.def(
      "register_searcher",
      [](const std::string& name, const py::function& fn, const std::string& description) {
        auto search = std::make_shared<PythonSearch>(fn);
        ThrowIfError(RegisterSearchFunction(
            name, description, [search](const SearchProblem& p) { return (*search)(p); }));
      },
      py::arg("name"), py::arg("fn"), py::arg("description") = "a searcher written in Python",
      "registers fn(problem) -> one candidate index per node as the searcher `name`, for "
      "plan(..., searcher=name); problem: the cost graph as a dict (python/csrc/searchers.cpp)");
  m.def(
      "unregister_searcher",
      [](const std::string& name) { ThrowIfError(UnregisterSearcher(name)); }, py::arg("name"),
      "removes a searcher registered with register_searcher");
}

}  // namespace ofl::python
