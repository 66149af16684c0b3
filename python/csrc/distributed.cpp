// Binding of api/DistributedSession: a Program compiled for a placement of
// virtual CPU devices under a strategy (deduced from pinned tensors, drawn
// at random, or written by hand), run by the actor runtime.
#include <pybind11/stl.h>

#include "convert.h"
#include "oneflow_lite/api/distributed_session.h"
#include "oneflow_lite/api/session.h"

namespace ofl::python {
namespace {

Placement MakePlacement(const std::vector<int64_t>& ranks, const std::vector<int64_t>& hierarchy) {
  return Unwrap(Placement::Create(DeviceType::kCPU, ranks, Shape(hierarchy)));
}

// {"kind": "deduce", "pinned": {tensor: "(S(0), B)"}}
// {"kind": "random", "seed": 3}
// {"kind": "manual", "sources": {tensor: nd_sbp}, "signatures": {op: "... -> ..."}}
Strategy MakeStrategy(const OpGraph& graph, const Placement& placement, const py::dict& spec) {
  std::string kind = spec.contains("kind") ? spec["kind"].cast<std::string>() : "deduce";
  auto nd_sbps = [&](const char* key) {
    std::map<std::string, NdSbp> out;
    if (!spec.contains(key)) return out;
    for (auto item : spec[key].cast<py::dict>()) {
      std::string tensor = py::str(item.first);
      std::string text = py::str(item.second);
      auto parsed = NdSbp::Parse(text);
      if (!parsed.ok()) {
        throw py::value_error("tensor '" + tensor + "': " + parsed.status().message());
      }
      out[tensor] = parsed.value();
    }
    return out;
  };
  if (kind == "deduce") return Unwrap(DeduceStrategy(graph, placement, nd_sbps("pinned")));
  if (kind == "random") {
    return Unwrap(RandomStrategy(graph, placement, spec["seed"].cast<uint64_t>()));
  }
  if (kind == "manual") {
    Strategy s(placement);
    for (const auto& [tensor, sbp] : nd_sbps("sources")) s.SetSourceSbp(tensor, sbp);
    if (spec.contains("signatures")) {
      for (auto item : spec["signatures"].cast<py::dict>()) {
        std::string op = py::str(item.first);
        auto sig = NdSbpSignature::Parse(py::str(item.second));
        if (!sig.ok()) throw py::value_error("op '" + op + "': " + sig.status().message());
        s.SetSignature(op, sig.value());
      }
    }
    ThrowIfError(s.Validate(graph));
    return s;
  }
  throw py::value_error("unknown strategy kind '" + kind + "' (expected deduce, random or manual)");
}

}  // namespace

void BindDistributed(py::module_& m) {
  py::class_<DistributedSession>(m, "DistributedSession")
      .def(py::init([](const Program& program, const std::vector<int64_t>& ranks,
                       const std::vector<int64_t>& hierarchy, const py::dict& strategy,
                       const std::vector<std::string>& fetches, int num_threads,
                       int64_t timeout_ms, const std::string& trace_path, int64_t num_slots) {
             Placement placement = MakePlacement(ranks, hierarchy);
             Strategy s = MakeStrategy(program.graph(), placement, strategy);
             DistributedOptions options;
             options.num_threads = num_threads;
             options.timeout = std::chrono::milliseconds(timeout_ms);
             options.trace_path = trace_path;
             options.num_slots = num_slots;
             return Unwrap(DistributedSession::Create(program.graph(), s, fetches, options));
           }),
           py::arg("program"), py::arg("ranks"), py::arg("hierarchy") = std::vector<int64_t>{},
           py::arg("strategy") = py::dict(), py::arg("fetches") = std::vector<std::string>{},
           py::arg("num_threads") = 0, py::arg("timeout_ms") = 60000,
           py::arg("trace_path") = "", py::arg("num_slots") = 2)
      .def("run",
           [](DistributedSession& s, const py::dict& feeds, const std::vector<std::string>& fetches) {
             std::map<std::string, Tensor> in;
             for (auto item : feeds) {
               std::string name = py::str(item.first);
               in[name] = TensorFromArray(item.second.cast<py::array>(), "input '" + name + "'");
             }
             std::vector<Tensor> out;
             {
               py::gil_scoped_release release;
               ThrowIfError(s.Run(in, fetches, &out));
             }
             py::list result;
             for (const Tensor& t : out) result.append(ArrayFromTensor(t));
             return result;
           },
           py::arg("feeds"), py::arg("fetches"))
      .def("get_variable",
           [](const DistributedSession& s, const std::string& name) {
             return ArrayFromTensor(Unwrap(s.GetVariable(name)));
           })
      .def("set_variable",
           [](DistributedSession& s, const std::string& name, const py::array& value) {
             ThrowIfError(s.SetVariable(name, TensorFromArray(value, "variable '" + name + "'")));
           })
      .def("bytes_sent", &DistributedSession::BytesSentByRank)
      .def("peak_bytes", &DistributedSession::PeakBytes)
      .def("strategy", [](const DistributedSession& s) { return s.strategy().ToString(s.graph()); })
      .def("plan_bytes",
           [](const DistributedSession& s) { return py::bytes(s.plan().SerializeAsString()); });
}

}  // namespace ofl::python
