// Binding of clusters (api/planning.h, api/calibrate.h): Cluster (levels,
// FLOP/s, the measured compute table, save), presets and files, and the
// calibration of this machine (one process, or every process of a job at
// once: calibrate_process_levels).
#include <pybind11/stl.h>

#include "convert.h"
#include "oneflow_lite/api/calibrate.h"
#include "oneflow_lite/api/calibrate_processes.h"
#include "oneflow_lite/api/calibrate_shapes.h"
#include "oneflow_lite/api/session.h"
#include "planned.h"

namespace ofl::python {
namespace {

// A CollectiveFigure from {kind, bandwidth_gbps, latency_us, optional points:
// [{bytes, seconds, group_size}]}.
proto::CollectiveFigure FigureFromDict(const std::map<std::string, py::object>& figure) {
  proto::CollectiveFigure f;
  try {
    f.set_kind(figure.at("kind").cast<std::string>());
    f.set_bandwidth_gbps(figure.at("bandwidth_gbps").cast<double>());
    f.set_latency_us(figure.at("latency_us").cast<double>());
    auto points = figure.find("points");
    if (points != figure.end()) {
      for (const auto& point :
           points->second.cast<std::vector<std::map<std::string, py::object>>>()) {
        proto::CollectivePoint* p = f.add_points();
        p->set_bytes(point.at("bytes").cast<double>());
        p->set_seconds(point.at("seconds").cast<double>());
        p->set_group_size(point.at("group_size").cast<int64_t>());
      }
    }
  } catch (const std::exception&) {
    throw py::value_error(
        "calibrate: each collective figure needs kind, bandwidth_gbps and latency_us, and "
        "each of its points (optional) bytes, seconds and group_size");
  }
  return f;
}

// A level's own collective figures: kind -> {bandwidth_bytes_per_s,
// latency_s, points: group size -> [(bytes, seconds)] sorted by bytes}.
py::dict CollectivesDict(const LinkLevel& level) {
  py::dict out;
  for (const auto& [kind, figure] : level.collectives) {
    py::dict f;
    f["bandwidth_bytes_per_s"] = figure.bandwidth_bytes_per_s;
    f["latency_s"] = figure.latency_s;
    py::dict points;
    for (const auto& [group, samples] : figure.points) {
      py::list list;
      for (const CollectiveSample& p : samples) list.append(py::make_tuple(p.bytes, p.seconds));
      points[py::int_(group)] = list;
    }
    f["points"] = points;
    out[py::str(kind)] = f;
  }
  return out;
}

// LinkLevels from [{name, size, bandwidth_gbps, latency_us, collectives}].
std::vector<proto::LinkLevel> LevelsFrom(
    const std::vector<std::map<std::string, py::object>>& levels) {
  std::vector<proto::LinkLevel> out;
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
      throw py::value_error(
          "calibrate: each of levels needs name, size, bandwidth_gbps, "
          "latency_us and collectives");
    }
    out.push_back(std::move(l));
  }
  return out;
}

// The figures of a calibration as a dict ('text': the Cluster file form).
py::dict FiguresDict(const Calibration& cal) {
  py::dict d;
  d["memcpy_gbps"] = cal.memcpy_gbps;
  d["matmul_flops"] = cal.matmul_flops;
  d["matmul_flops_after"] = cal.matmul_flops_after;
  d["matmul_drift"] = cal.matmul_drift();
  d["steady"] = cal.steady();
  d["allreduce_seconds"] = cal.allreduce_seconds;
  d["allreduce_bytes_sent"] = cal.allreduce_bytes_sent;
  d["latency_seconds"] = cal.latency_seconds;
  d["bandwidth_bytes_per_s"] = cal.bandwidth_bytes_per_s;
  d["memory_bytes"] = cal.memory_bytes;
  d["measured_at"] = cal.measured_at;
  d["compute_entries"] = cal.compute_entries;
  d["contention"] = cal.contention;
  d["text"] = cal.ToText();
  return d;
}

void BindClusterClass(py::module_& m) {
  py::class_<Cluster>(m, "Cluster")
      .def_property_readonly("name", &Cluster::name)
      .def_property_readonly("memory_bytes", &Cluster::memory_bytes)
      .def_property_readonly("cache_bytes", &Cluster::cache_bytes,
                             "the cache model's bytes per device (0: none; "
                             "graph/plan_cache_residency.h)")
      .def_property_readonly("memory_read_bytes_per_s", &Cluster::memory_read_bytes_per_s)
      .def(
          "with_cache_model",
          [](const Cluster& c, int64_t cache_bytes, double memory_read_bytes_per_s) {
            CacheModel m{cache_bytes, memory_read_bytes_per_s};
            if (cache_bytes < 0 || memory_read_bytes_per_s < 0) {
              py::gil_scoped_release release;
              const CacheModel host = MeasureCacheModel();
              if (cache_bytes < 0) m.cache_bytes = host.cache_bytes;
              if (memory_read_bytes_per_s < 0)
                m.memory_read_bytes_per_s = host.memory_read_bytes_per_s;
            }
            return Unwrap(WithCacheModel(c, m));
          },
          py::arg("cache_bytes") = -1, py::arg("memory_read_bytes_per_s") = -1.0,
          "this Cluster with a cache model (api/calibrate_shapes.h; -1: this host's, measured): "
          "a compute task's inputs its rank touched more than cache_bytes since their last use "
          "cost their bytes over memory_read_bytes_per_s (graph/plan_cache_residency.h)")
      .def("flops",
           [](const Cluster& c, const std::string& dtype) {
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
               d["collectives"] = CollectivesDict(l);
               out.append(d);
             }
             return out;
           })
      .def(
          "compute_seconds",
          [](const Cluster& c, const std::string& op_type, const std::string& dtype, double flops) {
            return c.compute_table().Seconds(op_type, Unwrap(ParseDataType(dtype)), flops);
          },
          py::arg("op_type"), py::arg("dtype"), py::arg("flops"),
          "the measured kernel seconds interpolated at `flops` (None: not in the table)")
      .def(
          "collective_seconds",
          [](const Cluster& c, const std::string& kind, double bytes, int64_t group_size,
             int level) {
            return Unwrap(ClusterCollectiveSeconds(c, kind, bytes, group_size, level));
          },
          py::arg("kind"), py::arg("bytes"), py::arg("group_size"), py::arg("level"),
          "search/'s CollectiveSeconds: seconds of `kind` when the busiest rank sends `bytes` "
          "in a group of `group_size` ranks on level index `level`")
      .def("compute_table_op_types", [](const Cluster& c) { return c.compute_table().OpTypes(); })
      .def(
          "contention",
          [](const Cluster& c, int64_t devices) { return c.compute_table().Contention(devices); },
          py::arg("devices"))
      .def("save", [](const Cluster& c, const std::string& path) { ThrowIfError(c.Save(path)); })
      .def("__str__", &Cluster::ToText);
}

void BindCalibrate(py::module_& m) {
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
        o.levels = LevelsFrom(levels);
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
        py::dict d = FiguresDict(cal);
        return py::make_tuple(*cal.cluster, d);
      },
      py::arg("devices") = 2, py::arg("num_threads") = 1, py::arg("memcpy_bytes") = 64 << 20,
      py::arg("matmul_size") = 512, py::arg("allreduce_bytes") = 16 << 20, py::arg("reps") = 5,
      py::arg("name") = "local", py::arg("per_collective") = true,
      py::arg("kernel_probes") = std::vector<const Program*>{}, py::arg("contention_devices") = 0,
      py::arg("collectives") = std::vector<std::map<std::string, py::object>>{},
      py::arg("collectives_source") = "",
      py::arg("levels") = std::vector<std::map<std::string, py::object>>{},
      py::arg("inprocess_level") = true, py::arg("levels_source") = "",
      py::arg("progress") = py::none(),
      "Measures this machine; returns (Cluster, figures dict whose 'text' is the file form). "
      "progress(what, done, total), when given, is called after each measurement. "
      "kernel_probes: Programs whose ops' kernel times (one device, then 2..contention_devices "
      "at once) make the compute table and contention factors (api/calibrate.h)");
}

void BindCalibratePlanKernels(py::module_& m) {
  m.def(
      "calibrate_plan_kernels",
      [](const Cluster& cluster, const std::vector<py::bytes>& plans, int num_threads, int reps) {
        std::vector<proto::Plan> parsed;
        for (size_t i = 0; i < plans.size(); ++i) {
          proto::Plan p;
          if (!p.ParseFromString(std::string(plans[i]))) {
            throw py::value_error("calibrate_plan_kernels: plans[" + std::to_string(i) +
                                  "] is not a serialized Plan");
          }
          parsed.push_back(std::move(p));
        }
        KernelTimingOptions o;
        o.num_threads = num_threads;
        o.reps = reps;
        Maybe<ShapeTimes> times = ShapeTimes{};
        {
          py::gil_scoped_release release;
          times = TimePlanKernels(parsed, o);
        }
        ShapeTimes t = Unwrap(std::move(times));
        py::list rows;
        for (const proto::ComputeEntry& e : t.entries) {
          rows.append(py::make_tuple(e.op_type(), e.shape(), e.flops(), e.seconds()));
        }
        py::dict d;
        d["entries"] = rows;
        d["skipped"] = t.skipped;
        return py::make_tuple(Unwrap(AddShapeEntries(cluster, t.entries)), d);
      },
      py::arg("cluster"), py::arg("plans"), py::arg("num_threads") = 1, py::arg("reps") = 5,
      "(Cluster, figures): `cluster` with a shape entry per distinct compute kernel of the "
      "serialized `plans` (PlannedStrategy.simulate(...)['plan']), each timed alone at its exact "
      "local shapes (api/calibrate_shapes.h); figures: entries (op_type, shape, flops, seconds), "
      "skipped (kernels that do not run alone, with why)");
}

void BindCalibrateProcesses(py::module_& m) {
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
}

}  // namespace

void BindClusters(py::module_& m) {
  BindClusterClass(m);
  m.def(
      "load_cluster", [](const std::string& path) { return Unwrap(LoadCluster(path)); },
      py::arg("path"));
  m.def(
      "preset_cluster", [](const std::string& name) { return Unwrap(PresetCluster(name)); },
      py::arg("name"));
  m.def("cluster_presets", &ClusterPresets);
  BindCalibrate(m);
  BindCalibrateProcesses(m);
  BindCalibratePlanKernels(m);
}

}  // namespace ofl::python
