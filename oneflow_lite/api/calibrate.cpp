#include "oneflow_lite/api/calibrate.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <ctime>
#include <fstream>
#include <functional>
#include <sstream>
#include <thread>
#include <vector>

#include "oneflow_lite/api/calibrate_kernels.h"
#include "oneflow_lite/api/calibrate_runs.h"
#include "oneflow_lite/api/session.h"
#include "runtime/inprocess_communicator.h"
#include "search/collective_time.h"

namespace ofl {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Seconds from starting `n` threads running fn(i) to joining them.
double TimeThreads(int64_t n, const std::function<void(int64_t)>& fn) {
  std::vector<std::thread> threads;
  const auto start = Clock::now();
  for (int64_t i = 0; i < n; ++i) threads.emplace_back(fn, i);
  for (auto& t : threads) t.join();
  return SecondsSince(start);
}

double MeasureMemcpyGbps(const CalibrationOptions& o) {
  std::vector<char> src(o.memcpy_bytes, 1), dst(o.memcpy_bytes, 0);
  const int64_t part = o.memcpy_bytes / o.num_threads;
  std::vector<double> gbps;
  for (int rep = -1; rep < o.reps; ++rep) {
    const double s = TimeThreads(o.num_threads, [&](int64_t i) {
      const int64_t begin = i * part;
      const int64_t end = i + 1 == o.num_threads ? o.memcpy_bytes : begin + part;
      std::memcpy(dst.data() + begin, src.data() + begin, end - begin);
    });
    if (rep >= 0) gbps.push_back(static_cast<double>(o.memcpy_bytes) / s / 1e9);
  }
  return Median(gbps);
}

Maybe<double> MeasureMatmulFlops(const CalibrationOptions& o) {
  const int64_t n = o.matmul_size;
  OpGraph graph;
  const TensorDesc desc{Shape({n, n}), DataType::kFloat32};
  OFL_RETURN_IF_ERROR(graph.AddInput("a", desc));
  OFL_RETURN_IF_ERROR(graph.AddInput("b", desc));
  OFL_ASSIGN_OR_RETURN(auto outputs, graph.AddOp("matmul", {"a", "b"}, {}, "calibrate_matmul"));
  SessionOptions session_options;
  session_options.num_threads = o.num_threads;
  OFL_ASSIGN_OR_RETURN(auto session, Session::Create(graph, session_options));
  const std::map<std::string, Tensor> feeds = {
      {"a", Tensor::Full(desc.shape, DataType::kFloat32, 0.5)},
      {"b", Tensor::Full(desc.shape, DataType::kFloat32, 0.25)}};
  std::vector<double> seconds;
  for (int rep = -1; rep < o.reps; ++rep) {
    std::vector<Tensor> results;
    const auto start = Clock::now();
    OFL_RETURN_IF_ERROR(session->Run(feeds, outputs, &results));
    const double s = SecondsSince(start);
    // Every element is the sum of n products 0.5 * 0.25: a wrong kernel must not pass.
    const float expected = 0.125f * static_cast<float>(n);
    OFL_ENSURE(results.size() == 1 && results[0].numel() == n * n &&
                   std::fabs(results[0].data<float>()[n * n - 1] - expected) <= 1e-3f * expected,
               "calibrate: the matmul of two ", n, "x", n, " constant matrices is wrong");
    if (rep >= 0) seconds.push_back(s);
  }
  return 2.0 * n * n * n / Median(seconds);
}

struct CollectiveRun {
  double seconds = 0;     // median
  double bytes_sent = 0;  // busiest rank, one collective
};

Maybe<CollectiveRun> MeasureCollective(CollectiveKind kind, int64_t devices, int64_t count,
                                       int reps) {
  InProcessGroup group(devices, std::chrono::milliseconds(60000));
  std::vector<std::vector<float>> in(devices, std::vector<float>(count, 1.0f));
  std::vector<std::vector<float>> out(devices, std::vector<float>(count, 0.0f));
  std::vector<Status> statuses(devices);
  std::vector<double> seconds;
  std::vector<int64_t> before = group.BytesSent();
  for (int rep = -1; rep < reps; ++rep) {
    if (rep == 0) before = group.BytesSent();
    const std::string tag = StrCat("calibrate_", CollectiveKindName(kind), "_", rep);
    const double s = TimeThreads(devices, [&](int64_t r) {
      statuses[r] = RunCollective(group.Rank(r), kind, count, &in[r], &out[r], tag);
    });
    for (const Status& st : statuses) OFL_RETURN_IF_ERROR(st);
    if (rep >= 0) seconds.push_back(s);
  }
  const std::vector<int64_t> after = group.BytesSent();
  int64_t busiest = 0;
  for (int64_t r = 0; r < devices; ++r) busiest = std::max(busiest, after[r] - before[r]);
  CollectiveRun run;
  run.seconds = Median(seconds);
  run.bytes_sent = static_cast<double>(busiest) / std::max(reps, 1);
  return run;
}

// Latency per ring step from a one-element-per-rank run, bandwidth from a
// large one: the busiest rank's bytes over the time left after the latency
// (the whole time when the latency eats 90 % of it).
struct CollectiveFit {
  CollectiveRun tiny, big;
  double latency_s = 0;
  double bandwidth_bytes_per_s = 0;
};

Maybe<CollectiveFit> FitCollective(CollectiveKind kind, const CalibrationOptions& o) {
  CollectiveFit fit;
  OFL_ASSIGN_OR_RETURN(fit.tiny, MeasureCollective(kind, o.devices, o.devices, o.reps));
  OFL_ASSIGN_OR_RETURN(fit.big, MeasureCollective(kind, o.devices, o.allreduce_bytes / 4, o.reps));
  const CollectiveFigure figure =
      FitCollectiveFigure(kind, o.devices, fit.tiny.seconds, fit.big.seconds, fit.big.bytes_sent);
  fit.latency_s = figure.latency_s;
  fit.bandwidth_bytes_per_s = figure.bandwidth_bytes_per_s;
  return fit;
}

std::string UtcNow() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

int64_t PhysicalMemoryBytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_size = sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page_size > 0 ? static_cast<int64_t>(pages) * page_size : 0;
}

Status CheckPositive(const char* what, double value) {
  OFL_ENSURE(std::isfinite(value) && value > 0, "calibrate: measured ", what, " = ", value,
             " is not positive and finite");
  return Status::OK();
}

}  // namespace

CollectiveFigure FitCollectiveFigure(CollectiveKind kind, int64_t group, double tiny_seconds,
                                     double big_seconds, double big_bytes_sent) {
  const double steps = static_cast<double>(CollectiveSteps(kind, group));
  CollectiveFigure figure;
  figure.latency_s = tiny_seconds / steps;
  double transfer = big_seconds - figure.latency_s * steps;
  if (transfer <= 0.1 * big_seconds) transfer = big_seconds;
  figure.bandwidth_bytes_per_s = big_bytes_sent / transfer;
  return figure;
}

std::string Calibration::ToText() const {
  return description + (cluster ? cluster->ToText() : std::string());
}

Status Calibration::Save(const std::string& path) const {
  std::ofstream out(path);
  OFL_ENSURE(out.good(), "calibrate: cannot open '", path, "' for writing");
  out << ToText();
  out.close();
  OFL_ENSURE(out.good(), "calibrate: writing '", path, "' failed");
  return Status::OK();
}

namespace {

Status CheckOptions(const CalibrationOptions& o) {
  OFL_ENSURE(o.devices >= 2, "calibrate: devices=", o.devices, " (needs >= 2 for an all-reduce)");
  OFL_ENSURE(o.num_threads >= 1, "calibrate: num_threads=", o.num_threads, " (needs >= 1)");
  OFL_ENSURE(o.memcpy_bytes >= o.num_threads, "calibrate: memcpy_bytes=", o.memcpy_bytes,
             " is smaller than num_threads=", o.num_threads);
  OFL_ENSURE(o.matmul_size >= 1, "calibrate: matmul_size=", o.matmul_size, " (needs >= 1)");
  OFL_ENSURE(o.allreduce_bytes >= 4 * o.devices, "calibrate: allreduce_bytes=", o.allreduce_bytes,
             " (needs at least one float32 per device, ", 4 * o.devices, ")");
  OFL_ENSURE(o.reps >= 1, "calibrate: reps=", o.reps, " (needs >= 1)");
  OFL_ENSURE(!o.name.empty(), "calibrate: the cluster name is empty");
  OFL_ENSURE(o.levels.empty() || o.collectives.empty(),
             "calibrate: levels and collectives are exclusive (give the levels)");
  OFL_ENSURE(o.inprocess_level || !o.levels.empty(),
             "calibrate: without the in-process level the levels must be given");
  OFL_ENSURE(o.contention_devices == 0 || o.contention_devices >= 2,
             "calibrate: contention_devices=", o.contention_devices, " (0 or >= 2)");
  for (size_t i = 0; i < o.kernel_probes.size(); ++i) {
    OFL_ENSURE(o.kernel_probes[i] != nullptr, "calibrate: kernel_probes[", i, "] is null");
  }
  return Status::OK();
}

// Counts the measurements done and tells options.progress.
class Progress {
 public:
  explicit Progress(const CalibrationOptions& o) : o_(o), total_(CalibrationSteps(o)) {}
  void Done(const std::string& what) {
    if (o_.progress) o_.progress(what, ++done_, total_);
  }

 private:
  const CalibrationOptions& o_;
  int done_ = 0;
  int total_;
};

int64_t ContentionDevices(const CalibrationOptions& o) {
  return o.contention_devices > 0 ? o.contention_devices : o.devices;
}

// The other collectives' own figures on the level (all-reduce's are the level's).
Status AddCollectiveFigures(const CalibrationOptions& o, proto::LinkLevel* level,
                            std::ostringstream* d, Progress* progress) {
  for (CollectiveKind kind : {CollectiveKind::kAllReduce, CollectiveKind::kReduceScatter,
                              CollectiveKind::kAllGather, CollectiveKind::kAllToAll}) {
    OFL_ASSIGN_OR_RETURN(const CollectiveFit fit, FitCollective(kind, o));
    progress->Done(StrCat(CollectiveKindName(kind), " on ", o.devices, " devices"));
    OFL_RETURN_IF_ERROR(CheckPositive("collective bandwidth", fit.bandwidth_bytes_per_s));
    proto::CollectiveFigure* f = level->add_collectives();
    f->set_kind(CollectiveKindName(kind));
    f->set_bandwidth_gbps(fit.bandwidth_bytes_per_s / 1e9);
    f->set_latency_us(fit.latency_s * 1e6);
    *d << "# " << CollectiveKindName(kind) << ": " << fit.tiny.seconds * 1e6 << " us tiny, "
       << fit.big.seconds * 1e3 << " ms for " << fit.big.bytes_sent
       << " bytes sent by the busiest rank\n";
  }
  return Status::OK();
}

// The compute table from the probes' kernel times (one device alone) and the
// contention factors from the same probes on 2..n devices at once.
Status AddKernelTable(const CalibrationOptions& o, proto::DeviceSpec* device, Calibration* c,
                      std::ostringstream* d, Progress* progress) {
  KernelTimingOptions alone;
  alone.num_threads = o.num_threads;
  alone.reps = o.reps;
  std::vector<std::vector<KernelTime>> alone_times;
  std::vector<KernelTime> all;
  for (const OpGraph* probe : o.kernel_probes) {
    OFL_ASSIGN_OR_RETURN(std::vector<KernelTime> times, TimeKernels(*probe, alone));
    progress->Done(StrCat("kernels of probe ", alone_times.size() + 1, " on one device"));
    all.insert(all.end(), times.begin(), times.end());
    alone_times.push_back(std::move(times));
  }
  for (proto::ComputeEntry& e : ToComputeEntries(all)) *device->add_compute() = std::move(e);
  c->compute_entries = device->compute_size();
  const int64_t max_devices = ContentionDevices(o);
  for (int64_t k = 2; k <= max_devices; ++k) {
    KernelTimingOptions together = alone;
    together.concurrent = static_cast<int>(k);
    double alone_sum = 0, together_sum = 0;
    for (size_t i = 0; i < o.kernel_probes.size(); ++i) {
      OFL_ASSIGN_OR_RETURN(std::vector<KernelTime> times,
                           TimeKernels(*o.kernel_probes[i], together));
      progress->Done(StrCat("kernels of probe ", i + 1, " on ", k, " devices at once"));
      const double ratio = SlowdownRatio(alone_times[i], times);
      double a = 0;
      for (const KernelTime& t : alone_times[i]) a += t.seconds;
      alone_sum += a;
      together_sum += a * ratio;
    }
    const double factor = alone_sum > 0 ? together_sum / alone_sum : 1.0;
    OFL_RETURN_IF_ERROR(CheckPositive("contention factor", factor));
    proto::Contention* entry = device->add_contention();
    entry->set_devices(k);
    entry->set_factor(factor);
    c->contention.emplace_back(k, factor);
  }
  *d << "# compute: " << device->compute_size() << " entries from " << all.size()
     << " op kernels of " << o.kernel_probes.size() << " probe graph(s), one device alone, "
     << o.num_threads << " kernel thread(s), medians of " << o.reps
     << " runs (runtime act records); no correction factor.\n";
  for (const auto& [k, factor] : c->contention) {
    *d << "# contention: " << k << " devices computing at once: x" << factor << "\n";
  }
  return Status::OK();
}

// The Cluster of one process's virtual devices: one shared-memory level
// with the all-reduce's figures, the matmul FLOP/s and the memory share.
proto::Cluster InProcessCluster(const CalibrationOptions& o, const Calibration& c) {
  proto::Cluster p;
  p.set_name(o.name);
  proto::LinkLevel* level = p.add_levels();
  level->set_name("shared_memory");
  level->set_size(o.devices);
  level->set_bandwidth_gbps(c.bandwidth_bytes_per_s / 1e9);
  level->set_latency_us(c.latency_seconds * 1e6);
  p.mutable_device()->set_name("cpu_virtual_device");
  (*p.mutable_device()->mutable_flops())["float32"] = c.matmul_flops;
  p.mutable_device()->set_memory_bytes(c.memory_bytes);
  return p;
}

// The Cluster file's comments: how each figure was measured; `extra`: the
// optional parts' lines.
std::string Describe(const CalibrationOptions& o, const Calibration& c,
                     const CollectiveFit& all_reduce, const std::string& extra) {
  const CollectiveRun& tiny = all_reduce.tiny;
  const CollectiveRun& big = all_reduce.big;
  const double steps = static_cast<double>(CollectiveSteps(CollectiveKind::kAllReduce, o.devices));
  std::ostringstream d;
  d << "# Cluster '" << o.name << "' measured on this machine by Calibrate "
    << "(oneflow_lite/api/calibrate.h) at " << c.measured_at << ".\n"
    << "# " << o.devices << " virtual CPU devices in one process; medians of " << o.reps
    << " runs after one warm-up.\n"
    << "# memcpy: " << o.num_threads << " thread(s) copying " << o.memcpy_bytes
    << " bytes: " << c.memcpy_gbps << " GB/s (ceiling of any in-process transfer).\n"
    << "# flops float32: the registered matmul op, " << o.matmul_size << "^3, through a Session "
    << "with " << o.num_threads << " kernel thread(s): " << c.matmul_flops / 1e9 << " GFLOP/s.\n"
    << (o.collectives.empty() ? ""
                              : "# (in-process figures, kept as comments: the level uses "
                                "the collectives measured across processes, below)\n")
    << "# latency: InProcessCommunicator all-reduce of " << o.devices << " floats, "
    << tiny.seconds * 1e6 << " us over " << steps << " ring steps.\n"
    << "# bandwidth: all-reduce of " << o.allreduce_bytes << " bytes per device in "
    << big.seconds * 1e3 << " ms; the busiest rank sent " << big.bytes_sent
    << " bytes (the communicator's own count).\n"
    << "# memory: physical memory / " << o.devices << " devices.\n"
    << extra;
  return d.str();
}

}  // namespace

int CalibrationSteps(const CalibrationOptions& o) {
  const int64_t probes = static_cast<int64_t>(o.kernel_probes.size());
  const int64_t collectives = o.collectives.empty() && o.per_collective ? 4 : 0;
  return static_cast<int>(4 + collectives +
                          probes * (1 + std::max<int64_t>(0, ContentionDevices(o) - 1)));
}

Maybe<Calibration> Calibrate(const CalibrationOptions& o) {
  OFL_RETURN_IF_ERROR(CheckOptions(o));
  Progress progress(o);
  Calibration c;
  c.measured_at = UtcNow();
  c.memcpy_gbps = MeasureMemcpyGbps(o);
  progress.Done("memcpy");
  OFL_ASSIGN_OR_RETURN(c.matmul_flops, MeasureMatmulFlops(o));
  progress.Done("matmul");
  OFL_ASSIGN_OR_RETURN(const CollectiveFit all_reduce,
                       FitCollective(CollectiveKind::kAllReduce, o));
  progress.Done(StrCat("all-reduce on ", o.devices, " devices"));
  const CollectiveRun& big = all_reduce.big;
  c.latency_seconds = all_reduce.latency_s;
  c.allreduce_seconds = big.seconds;
  c.allreduce_bytes_sent = big.bytes_sent;
  c.bandwidth_bytes_per_s = all_reduce.bandwidth_bytes_per_s;
  c.memory_bytes = PhysicalMemoryBytes() / o.devices;
  OFL_RETURN_IF_ERROR(CheckPositive("memcpy GB/s", c.memcpy_gbps));
  OFL_RETURN_IF_ERROR(CheckPositive("matmul FLOP/s", c.matmul_flops));
  OFL_RETURN_IF_ERROR(CheckPositive("all-reduce latency", c.latency_seconds));
  OFL_RETURN_IF_ERROR(CheckPositive("all-reduce bandwidth", c.bandwidth_bytes_per_s));
  OFL_RETURN_IF_ERROR(CheckPositive("memory per device", static_cast<double>(c.memory_bytes)));

  proto::Cluster p = InProcessCluster(o, c);
  proto::LinkLevel* level = p.mutable_levels(0);
  std::ostringstream extra;
  if (!o.collectives.empty()) {
    // Measured elsewhere (across processes): they replace the in-process
    // figures, and the all-reduce's become the level's.
    for (const proto::CollectiveFigure& f : o.collectives) {
      *level->add_collectives() = f;
      if (f.kind() == "all_reduce") {
        level->set_bandwidth_gbps(f.bandwidth_gbps());
        level->set_latency_us(f.latency_us());
      }
    }
    extra << "# collectives: " << o.collectives_source << "\n";
  } else if (o.per_collective) {
    OFL_RETURN_IF_ERROR(AddCollectiveFigures(o, level, &extra, &progress));
  }
  if (!o.levels.empty()) {
    if (!o.inprocess_level) p.clear_levels();
    for (const proto::LinkLevel& l : o.levels) *p.add_levels() = l;
    std::istringstream lines(o.levels_source);
    for (std::string line; std::getline(lines, line);) extra << "# " << line << "\n";
  }
  if (!o.kernel_probes.empty()) {
    OFL_RETURN_IF_ERROR(AddKernelTable(o, p.mutable_device(), &c, &extra, &progress));
  }
  // Every figure above assumes the machine stayed as it was: the reference
  // matmul again says whether it did (the cluster keeps the first figure).
  OFL_ASSIGN_OR_RETURN(c.matmul_flops_after, MeasureMatmulFlops(o));
  progress.Done("matmul again");
  OFL_RETURN_IF_ERROR(CheckPositive("matmul FLOP/s at the end", c.matmul_flops_after));
  extra << "# steadiness: the matmul again at the end: " << c.matmul_flops_after / 1e9
        << " GFLOP/s (" << (c.matmul_drift() >= 0 ? "+" : "") << c.matmul_drift() * 100 << " %)"
        << (!c.steady() ? ": the machine's load changed while calibrating; the figures "
                          "mix both states"
                        : "")
        << ".\n";
  OFL_ASSIGN_OR_RETURN(Cluster cluster, Cluster::FromProto(p));
  c.cluster = std::move(cluster);

  c.description = Describe(o, c, all_reduce, extra.str());
  return c;
}

}  // namespace ofl
