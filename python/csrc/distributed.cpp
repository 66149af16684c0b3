// Binding of api/DistributedSession: a Program compiled for a placement of
// virtual CPU devices under a strategy (deduced from pinned tensors, drawn
// at random, or written by hand), run by the actor runtime. Pipelines:
// {"kind": "random", "seed": s, "stages": n} splits the ranks into n equal
// contiguous flat placements (stages) at random forward-op boundaries;
// micro_batches=k runs k micro-batches per step, and run() then takes a
// list of k feed dicts and returns a list of k lists of fetched arrays.
// Sharded checkpoints: local_ranks(), variable_layout(name) (a dict),
// get_variable_slice(name, rank) and set_variable_slice(name, rank, array).
#include <pybind11/stl.h>

#include <type_traits>

#include "convert.h"
#include "oneflow_lite/api/distributed_session.h"
#include "oneflow_lite/api/session.h"
#include "oneflow_lite/api/strategy_spec.h"
#include "oneflow_lite/api/world_exchange.h"

namespace ofl::python {
namespace {

Placement MakePlacement(const std::string& device_type, const std::vector<int64_t>& ranks,
                        const std::vector<int64_t>& hierarchy) {
  return Unwrap(Placement::Create(Unwrap(ParseDeviceType(device_type)), ranks, Shape(hierarchy)));
}

// The strategy's field `key`, which must be a Python `T` (a str, a dict, or
// an int in int64 range; bool is no int here): a TypeError or ValueError
// naming the field and the value otherwise. Strategies come from files
// (load_strategy), so every field is user input.
std::string Repr(const py::handle& value) { return py::repr(value).cast<std::string>(); }

template <typename T>
T Field(const py::dict& spec, const char* key) {
  if (!spec.contains(key)) throw py::value_error(std::string("strategy: no '") + key + "'");
  py::object value = spec[key];
  if constexpr (std::is_same_v<T, int64_t>) {
    if (!py::isinstance<py::int_>(value) || py::isinstance<py::bool_>(value)) {
      throw py::type_error(std::string("strategy: '") + key + "' is " + Repr(value) +
                           ", not an integer");
    }
    try {
      return value.cast<int64_t>();
    } catch (const py::cast_error&) {
      throw py::value_error(std::string("strategy: '") + key + "' is " + Repr(value) +
                            ", outside the 64-bit range");
    }
  } else {
    if (!py::isinstance<T>(value)) {
      throw py::type_error(std::string("strategy: '") + key + "' is " + Repr(value) + ", not a " +
                           (std::is_same_v<T, py::str> ? "str" : "dict"));
    }
    return value.cast<T>();
  }
}

// {"kind": "deduce", "pinned": {tensor: "(S(0), B)"}}
// {"kind": "random", "seed": 3, "stages": 2}
// {"kind": "manual", "sources": {tensor: nd_sbp}, "signatures": {op: "... -> ..."}}
// (api/strategy_spec.h checks it against the graph; here only the types).
StrategySpec SpecFrom(const py::dict& spec) {
  StrategySpec s;
  if (spec.contains("kind")) s.kind = Field<py::str>(spec, "kind").cast<std::string>();
  auto texts = [&](const char* key) {
    std::map<std::string, std::string> out;
    if (!spec.contains(key)) return out;
    for (auto item : Field<py::dict>(spec, key)) out[py::str(item.first)] = py::str(item.second);
    return out;
  };
  s.pinned = texts("pinned");
  s.sources = texts("sources");
  s.signatures = texts("signatures");
  if (s.kind == "random") {
    const int64_t seed = Field<int64_t>(spec, "seed");
    s.stages = spec.contains("stages") ? Field<int64_t>(spec, "stages") : 1;
    if (s.stages < 1 || seed < 0) {
      throw py::value_error("strategy: random needs stages >= 1 and seed >= 0, got stages=" +
                            std::to_string(s.stages) + " seed=" + std::to_string(seed));
    }
    s.seed = static_cast<uint64_t>(seed);
  }
  return s;
}

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

}  // namespace

void BindDistributed(py::module_& m) {
  py::class_<DistributedSession>(m, "DistributedSession")
      .def(py::init([](const Program& program, const std::vector<int64_t>& ranks,
                       const std::vector<int64_t>& hierarchy, const py::dict& strategy,
                       const std::vector<std::string>& fetches, int num_threads,
                       int64_t timeout_ms, const std::string& trace_path, int64_t num_slots,
                       int64_t micro_batches, bool transactional, bool local_feeds,
                       const std::string& device_type, int64_t gradient_bucket_bytes) {
             Placement placement = MakePlacement(device_type, ranks, hierarchy);
             Strategy s = Unwrap(MakeStrategy(program.graph(), placement, SpecFrom(strategy)));
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
             py::gil_scoped_release release;  // the processes meet (rendezvous) here
             return Unwrap(DistributedSession::Create(program.graph(), s, fetches, options));
           }),
           py::arg("program"), py::arg("ranks"), py::arg("hierarchy") = std::vector<int64_t>{},
           py::arg("strategy") = py::dict(), py::arg("fetches") = std::vector<std::string>{},
           py::arg("num_threads") = 0, py::arg("timeout_ms") = 60000,
           py::arg("trace_path") = "", py::arg("num_slots") = 2, py::arg("micro_batches") = 1,
           py::arg("transactional") = true, py::arg("local_feeds") = false,
           py::arg("device_type") = "cpu",
           py::arg("gradient_bucket_bytes") = DistributedOptions{}.gradient_bucket_bytes)
      .def("run",
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
           "returns the fetched arrays, or one list of them per micro-batch")
      .def("set_detect_anomaly", &DistributedSession::set_detect_anomaly, py::arg("on"),
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
      .def("variable_layout",
           [](const DistributedSession& s, const std::string& name) {
             return LayoutDict(Unwrap(s.VariableLayoutOf(name)));
           },
           py::arg("name"),
           "shape, dtype, nd_sbp, ranks, hierarchy, and slices: rank -> {offset, shape, "
           "partial, primary (the one copy a checkpoint stores)}")
      .def("get_variable_slice",
           [](const DistributedSession& s, const std::string& name, int64_t rank) {
             return ArrayFromTensor(Unwrap(s.GetVariableSlice(name, rank)));
           },
           py::arg("name"), py::arg("rank"))
      .def("set_variable_slice",
           [](DistributedSession& s, const std::string& name, int64_t rank,
              const py::array& value) {
             const std::string what =
                 "set_variable_slice: variable '" + name + "' rank " + std::to_string(rank);
             ThrowIfError(s.SetVariableSlice(name, rank, TensorFromArray(value, what)));
           },
           py::arg("name"), py::arg("rank"), py::arg("value"))
      .def("bytes_sent", &DistributedSession::BytesSentByRank)
      .def("peak_bytes", &DistributedSession::PeakBytes)
      .def("undo_bytes", &DistributedSession::UndoBytes,
           "per rank: bytes of the undo copy of the variables (transactional steps), part of "
           "peak_bytes")
      .def("strategy", [](const DistributedSession& s) { return s.strategy().ToString(s.graph()); })
      .def("to_dot",
           [](const DistributedSession& s) { return s.StrategyDot(); },
           "the strategy as Graphviz DOT (graph/strategy_dot.h)")
      .def("plan_bytes",
           [](const DistributedSession& s) { return py::bytes(s.plan().SerializeAsString()); });
  m.def(
      "world_info",
      []() {
        std::shared_ptr<ProcessWorld> w;
        {
          py::gil_scoped_release release;  // the processes meet here the first time
          w = Unwrap(WorldFromEnvironment());
        }
        py::dict d;
        d["process"] = w->process();
        d["num_processes"] = w->num_processes();
        d["devices_per_process"] = w->devices_per_process();
        d["distributed"] = w->distributed();
        return d;
      },
      "this process's world from the launcher's environment (made on the first call)");
  m.def(
      "world_all_gather",
      [](const py::bytes& data, const std::string& owner) {
        const std::string mine = data;
        std::vector<std::vector<char>> all;
        {
          py::gil_scoped_release release;
          auto w = Unwrap(WorldFromEnvironment());
          all = Unwrap(w->AllGather(w->NextScope(owner), std::vector<char>(mine.begin(), mine.end())));
        }
        py::list out;
        for (const auto& v : all) out.append(py::bytes(v.data(), v.size()));
        return out;
      },
      py::arg("data"), py::arg("owner") = "py",
      "every process's bytes, by process index (collective: every process calls it alike, in "
      "the same order per owner; owners are numbered apart, so two threads may use two)");
  m.def(
      "world_publish",
      [](const std::string& name, const py::bytes& data) {
        const std::string value = data;
        py::gil_scoped_release release;
        auto w = Unwrap(WorldFromEnvironment());
        if (w->store() == nullptr) return;
        ThrowIfError(w->store()->Set(w->Key("py/" + name),
                                     std::vector<char>(value.begin(), value.end())));
      },
      py::arg("name"), py::arg("data"),
      "sets the job's key py/<name> (not a collective: a lost peer does not stop it)");
  m.def(
      "world_await",
      [](const std::string& name) -> py::object {
        std::vector<char> value;
        Status status;
        {
          py::gil_scoped_release release;
          auto w = Unwrap(WorldFromEnvironment());
          if (w->store() == nullptr) return py::none();
          auto got = w->store()->Get(w->Key("py/" + name), w->options().timeout);
          status = got.status();
          if (got.ok()) value = std::move(got).value();
        }
        if (status.code() == StatusCode::kTimeout) ThrowIfError(status);
        if (!status.ok()) return py::none();  // the store is gone: process 0 is
        return py::bytes(value.data(), value.size());
      },
      py::arg("name"),
      "the job's key py/<name> once set (bounded by the world's timeout), or None when the "
      "store no longer answers (process 0, its host, is gone)");
  m.def(
      "world_report_lost",
      [](const std::string& master_addr, int master_port, const std::string& job_id,
         const std::string& reason, int64_t timeout_ms) {
        WorldOptions o;
        o.master_addr = master_addr;
        o.master_port = master_port;
        o.job_id = job_id;
        o.timeout = std::chrono::milliseconds(timeout_ms);
        py::gil_scoped_release release;
        ThrowIfError(ReportLostProcess(o, reason));
      },
      py::arg("master_addr"), py::arg("master_port"), py::arg("job_id"), py::arg("reason"),
      py::arg("timeout_ms") = 2000,
      "sets the job's failure key to `reason` unless a loss is there already (the launcher, "
      "for a child that died)");
  m.def(
      "world_shutdown",
      []() {
        py::gil_scoped_release release;
        auto w = WorldFromEnvironment();
        if (w.ok()) w.value()->Shutdown();
      },
      "leaves the world's store cleanly (process 0, its host, waits for the others)");
}

}  // namespace ofl::python
