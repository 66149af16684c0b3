// Binding of this process's world (api/distributed_session.h,
// api/world_exchange.h): its shape from the launcher's environment, the
// collectives Python code uses across processes (all-gather, publish,
// await), the launcher's report of a lost child, and a clean shutdown.
#include <pybind11/stl.h>

#include "convert.h"
#include "oneflow_lite/api/distributed_session.h"
#include "oneflow_lite/api/world_exchange.h"

namespace ofl::python {
namespace {

void BindWorldExchange(py::module_& m) {
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
          all = Unwrap(
              w->AllGather(w->NextScope(owner), std::vector<char>(mine.begin(), mine.end())));
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
        ThrowIfError(
            w->store()->Set(w->Key("py/" + name), std::vector<char>(value.begin(), value.end())));
      },
      py::arg("name"), py::arg("data"),
      "sets the job's key py/<name> (not a collective: a lost peer does not stop it)");
}

void BindWorldLifecycle(py::module_& m) {
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

}  // namespace

void BindWorld(py::module_& m) {
  BindWorldExchange(m);
  BindWorldLifecycle(m);
}

}  // namespace ofl::python
