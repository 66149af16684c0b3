// Binding of api/DistributedSession and api/compile.h: a Program compiled
// for a placement (ranks, hierarchy and device type, built once here) under
// a strategy: a _C.Strategy (searched, loaded or written by hand) or a
// _C.PlanSpec (deduce from pinned tensors; random(seed, stages): random
// signatures over `stages` equal contiguous pipeline stages), run by the
// actor runtime; and _C.compile, which also searches (PlanSpec.search) and
// returns the strategy, the planned strategy and the session at once.
// micro_batches=k runs k micro-batches per step, and run() then takes a list
// of k feed dicts and returns a list of k lists of fetched arrays. Sharded
// checkpoints: local_ranks(), variable_layout(name) (a dict),
// get_variable_slice(name, rank) and set_variable_slice(name, rank, array).
#include <pybind11/stl.h>

#include "convert.h"
#include "oneflow_lite/api/compile.h"
#include "oneflow_lite/api/distributed_session.h"
#include "oneflow_lite/api/session.h"
#include "oneflow_lite/api/world_exchange.h"
#include "planned.h"
#include "strategy_types.h"

namespace ofl::python {

void BindWorld(py::module_& m);  // world.cpp

namespace {

// {"shape", "dtype", "nd_sbp", "ranks", "hierarchy", "slices": {rank: {"offset",
// "shape", "partial", "primary"}}}: api's VariableLayout.
py::dict LayoutDict(const VariableLayout& layout) {
  py::dict slices;
  for (int64_t i = 0; i < layout.placement.size(); ++i) {
    const TensorSlice& s = layout.slices[i];
    py::dict d;
    d["offset"] = s.offset;
    d["shape"] = s.shape.dims();
    d["partial"] = s.partial;
    d["primary"] = static_cast<bool>(layout.primary[i]);
    slices[py::int_(layout.placement.ranks()[i])] = d;
  }
  py::dict out;
  out["shape"] = layout.shape.dims();
  out["dtype"] = std::string(DataTypeName(layout.dtype));
  out["nd_sbp"] = layout.nd_sbp.ToString();
  out["ranks"] = layout.placement.ranks();
  out["hierarchy"] = layout.placement.hierarchy().dims();
  out["slices"] = slices;
  return out;
}

// The session options of the binding's keyword arguments, the world from
// the launcher's environment.
DistributedOptions SessionOptions(int num_threads, int64_t timeout_ms,
                                  const std::string& trace_path, int64_t num_slots,
                                  int64_t micro_batches, bool transactional, bool local_feeds,
                                  int64_t gradient_bucket_bytes) {
  DistributedOptions options;
  options.num_threads = num_threads;
  options.timeout = std::chrono::milliseconds(timeout_ms);
  options.trace_path = trace_path;
  options.num_slots = num_slots;
  options.micro_batches = micro_batches;
  options.transactional = transactional;
  options.local_feeds = local_feeds;
  options.gradient_bucket_bytes = gradient_bucket_bytes;
  options.world = Unwrap(WorldFromEnvironment());
  return options;
}

CompiledGraph CompileUnlocked(const Program& program, const Placement& placement,
                              const PlanSpec& spec, const std::vector<std::string>& fetches,
                              const DistributedOptions& options) {
  Maybe<CompiledGraph> compiled = CompiledGraph{};
  {
    py::gil_scoped_release release;  // the search runs, and the processes meet, here
    compiled = Compile(program.graph(), placement, spec, fetches, options);
  }
  return Unwrap(std::move(compiled));
}

// The keyword arguments DistributedSession and compile share, after fetches.
#define OFL_SESSION_ARGS                                                                   \
  py::arg("num_threads") = 0, py::arg("timeout_ms") = 60000, py::arg("trace_path") = "",   \
  py::arg("num_slots") = 2, py::arg("micro_batches") = 1, py::arg("transactional") = true, \
  py::arg("local_feeds") = false,                                                          \
  py::arg("gradient_bucket_bytes") = DistributedOptions{}.gradient_bucket_bytes

void BindSessionRun(py::class_<DistributedSession>& c) {
  c.def(
      "run",
      [](DistributedSession& s, const py::object& feeds,
         const std::vector<std::string>& fetches) -> py::object {
        auto to_map = [](const py::dict& d) {
          std::map<std::string, Tensor> in;
          for (auto item : d) {
            std::string name = py::str(item.first);
            in[name] = TensorFromArray(item.second.cast<py::array>(), "input '" + name + "'");
          }
          return in;
        };
        const bool per_micro_batch = !py::isinstance<py::dict>(feeds);
        std::vector<std::map<std::string, Tensor>> in;
        if (per_micro_batch) {
          for (auto d : feeds.cast<py::list>()) in.push_back(to_map(d.cast<py::dict>()));
        } else {
          in.push_back(to_map(feeds.cast<py::dict>()));
        }
        std::vector<std::vector<Tensor>> out;
        {
          py::gil_scoped_release release;
          ThrowIfError(s.RunStep(in, fetches, &out));
        }
        py::list result;
        for (const auto& micro_batch : out) {
          py::list fetched;
          for (const Tensor& t : micro_batch) {
            if (t.defined()) {
              fetched.append(ArrayFromTensor(t));
            } else {
              fetched.append(py::none());
            }
          }
          result.append(fetched);
        }
        return per_micro_batch ? py::object(result) : py::object(result[0]);
      },
      py::arg("feeds"), py::arg("fetches"),
      "feeds: a dict (one micro-batch) or a list of micro_batches dicts (one step); "
      "returns the fetched arrays, or one list of them per micro-batch");
}

void BindSessionState(py::class_<DistributedSession>& c) {
  c.def("set_detect_anomaly", &DistributedSession::set_detect_anomaly, py::arg("on"),
        "runs fail at the first op whose output holds a NaN or Inf, naming it")
      .def("get_variable",
           [](const DistributedSession& s, const std::string& name) {
             return ArrayFromTensor(Unwrap(s.GetVariable(name)));
           })
      .def("set_variable",
           [](DistributedSession& s, const std::string& name, const py::array& value) {
             ThrowIfError(s.SetVariable(name, TensorFromArray(value, "variable '" + name + "'")));
           })
      .def("local_ranks", &DistributedSession::LocalRanks,
           "this process's ranks of the plan (every rank in a world of one process)")
      .def(
          "variable_layout",
          [](const DistributedSession& s, const std::string& name) {
            return LayoutDict(Unwrap(s.VariableLayoutOf(name)));
          },
          py::arg("name"),
          "shape, dtype, nd_sbp, ranks, hierarchy, and slices: rank -> {offset, shape, "
          "partial, primary (the one copy a checkpoint stores)}")
      .def(
          "get_variable_slice",
          [](const DistributedSession& s, const std::string& name, int64_t rank) {
            return ArrayFromTensor(Unwrap(s.GetVariableSlice(name, rank)));
          },
          py::arg("name"), py::arg("rank"))
      .def(
          "set_variable_slice",
          [](DistributedSession& s, const std::string& name, int64_t rank, const py::array& value) {
            const std::string what =
                "set_variable_slice: variable '" + name + "' rank " + std::to_string(rank);
            ThrowIfError(s.SetVariableSlice(name, rank, TensorFromArray(value, what)));
          },
          py::arg("name"), py::arg("rank"), py::arg("value"))
      .def_property(
          "iteration", &DistributedSession::iteration,
          [](DistributedSession& s, int64_t i) { ThrowIfError(s.SetIteration(i)); },
          "the random stream's position: micro-batches run so far (dropout draws from it); "
          "checkpoints save and restore it")
      .def_property_readonly("micro_batches", &DistributedSession::micro_batches)
      .def("bytes_sent", &DistributedSession::BytesSentByRank)
      .def("peak_bytes", &DistributedSession::PeakBytes)
      .def("undo_bytes", &DistributedSession::UndoBytes,
           "per rank: the bytes the undo copy of the variables (transactional steps) adds, "
           "part of peak_bytes (on host ranks it lies mostly over arena bytes dead or spare at "
           "the update)")
      .def("strategy", [](const DistributedSession& s) { return s.strategy().ToString(s.graph()); })
      .def(
          "to_dot", [](const DistributedSession& s) { return s.StrategyDot(); },
          "the strategy as Graphviz DOT (graph/strategy_dot.h)")
      .def("plan_bytes",
           [](const DistributedSession& s) { return py::bytes(s.plan().SerializeAsString()); });
}

// A compiled graph as Python holds it: the session is a Python object (it
// owns the C++ session).
struct PyCompiled {
  Strategy strategy;
  py::object planned;  // PlannedStrategy or None
  py::object session;  // DistributedSession
};

void BindCompile(py::module_& m) {
  py::class_<PyCompiled>(m, "CompiledGraph")
      .def_readonly("strategy", &PyCompiled::strategy)
      .def_readonly("planned", &PyCompiled::planned, "the PlannedStrategy (None: not searched)")
      .def_readonly("session", &PyCompiled::session)
      .def_property_readonly("plan_bytes", [](const PyCompiled& c) {
        return py::bytes(c.session.cast<const DistributedSession&>().plan().SerializeAsString());
      });
  m.def(
      "compile",
      [](const Program& program, const Placement& placement, const PlanSpec& spec,
         const std::vector<std::string>& fetches, int num_threads, int64_t timeout_ms,
         const std::string& trace_path, int64_t num_slots, int64_t micro_batches,
         bool transactional, bool local_feeds, int64_t gradient_bucket_bytes) {
        DistributedOptions options =
            SessionOptions(num_threads, timeout_ms, trace_path, num_slots, micro_batches,
                           transactional, local_feeds, gradient_bucket_bytes);
        CompiledGraph c = CompileUnlocked(program, placement, spec, fetches, options);
        auto graph = std::make_shared<const OpGraph>(program.graph());
        py::object planned =
            c.planned ? py::cast(PyPlanned{graph, std::move(*c.planned)}) : py::object(py::none());
        return PyCompiled{std::move(c.strategy), planned, py::cast(std::move(c.session))};
      },
      py::arg("program"), py::arg("placement"), py::arg("spec"),
      py::arg("fetches") = std::vector<std::string>{}, OFL_SESSION_ARGS,
      "searches (PlanSpec.search: costed for micro_batches) or makes the strategy, and "
      "builds its session on `placement`: a CompiledGraph (strategy, planned, session)");
}

}  // namespace

void BindDistributed(py::module_& m) {
  py::class_<DistributedSession> c(m, "DistributedSession");
  c.def(py::init([](const Program& program, const std::vector<int64_t>& ranks,
                    const std::vector<int64_t>& hierarchy, const py::object& strategy,
                    const std::vector<std::string>& fetches, int num_threads, int64_t timeout_ms,
                    const std::string& trace_path, int64_t num_slots, int64_t micro_batches,
                    bool transactional, bool local_feeds, int64_t gradient_bucket_bytes,
                    const std::string& device_type) {
          Placement placement = Unwrap(
              Placement::Create(Unwrap(ParseDeviceType(device_type)), ranks, Shape(hierarchy)));
          DistributedOptions options =
              SessionOptions(num_threads, timeout_ms, trace_path, num_slots, micro_batches,
                             transactional, local_feeds, gradient_bucket_bytes);
          return std::move(
              CompileUnlocked(program, placement, SpecOf(strategy), fetches, options).session);
        }),
        py::arg("program"), py::arg("ranks"), py::arg("hierarchy") = std::vector<int64_t>{},
        py::arg("strategy") = py::none(), py::arg("fetches") = std::vector<std::string>{},
        OFL_SESSION_ARGS, py::arg("device_type") = "cpu",
        "strategy: a Strategy, a PlanSpec, or None (deduce with no pins)");
  BindSessionRun(c);
  BindSessionState(c);
  BindCompile(m);
  BindWorld(m);
}

#undef OFL_SESSION_ARGS

}  // namespace ofl::python
