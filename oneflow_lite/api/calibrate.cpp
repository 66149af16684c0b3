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

#include "oneflow_lite/api/session.h"
#include "runtime/inprocess_communicator.h"
#include "search/collective_time.h"

namespace ofl {
namespace {

using Clock = std::chrono::steady_clock;

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t h = v.size() / 2;
  return v.size() % 2 ? v[h] : 0.5 * (v[h - 1] + v[h]);
}

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

struct AllReduceFigure {
  double seconds = 0;     // median
  double bytes_sent = 0;  // busiest rank, one all-reduce
};

Maybe<AllReduceFigure> MeasureAllReduce(int64_t devices, int64_t count, int reps) {
  InProcessGroup group(devices, std::chrono::milliseconds(60000));
  std::vector<std::vector<float>> buffers(devices, std::vector<float>(count, 1.0f));
  std::vector<Status> statuses(devices);
  std::vector<double> seconds;
  std::vector<int64_t> before = group.BytesSent();
  for (int rep = -1; rep < reps; ++rep) {
    if (rep == 0) before = group.BytesSent();
    const double s = TimeThreads(devices, [&](int64_t r) {
      statuses[r] = group.Rank(r)->AllReduce(buffers[r].data(), count, DataType::kFloat32,
                                             "calibrate_" + std::to_string(rep));
    });
    for (const Status& st : statuses) OFL_RETURN_IF_ERROR(st);
    if (rep >= 0) seconds.push_back(s);
  }
  const std::vector<int64_t> after = group.BytesSent();
  int64_t busiest = 0;
  for (int64_t r = 0; r < devices; ++r) busiest = std::max(busiest, after[r] - before[r]);
  AllReduceFigure fig;
  fig.seconds = Median(seconds);
  fig.bytes_sent = static_cast<double>(busiest) / std::max(reps, 1);
  return fig;
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

Maybe<Calibration> Calibrate(const CalibrationOptions& o) {
  OFL_ENSURE(o.devices >= 2, "calibrate: devices=", o.devices, " (needs >= 2 for an all-reduce)");
  OFL_ENSURE(o.num_threads >= 1, "calibrate: num_threads=", o.num_threads, " (needs >= 1)");
  OFL_ENSURE(o.memcpy_bytes >= o.num_threads, "calibrate: memcpy_bytes=", o.memcpy_bytes,
             " is smaller than num_threads=", o.num_threads);
  OFL_ENSURE(o.matmul_size >= 1, "calibrate: matmul_size=", o.matmul_size, " (needs >= 1)");
  OFL_ENSURE(o.allreduce_bytes >= 4 * o.devices, "calibrate: allreduce_bytes=",
             o.allreduce_bytes, " (needs at least one float32 per device, ", 4 * o.devices, ")");
  OFL_ENSURE(o.reps >= 1, "calibrate: reps=", o.reps, " (needs >= 1)");
  OFL_ENSURE(!o.name.empty(), "calibrate: the cluster name is empty");

  Calibration c;
  c.measured_at = UtcNow();
  c.memcpy_gbps = MeasureMemcpyGbps(o);
  OFL_ASSIGN_OR_RETURN(c.matmul_flops, MeasureMatmulFlops(o));
  OFL_ASSIGN_OR_RETURN(AllReduceFigure tiny, MeasureAllReduce(o.devices, o.devices, o.reps));
  OFL_ASSIGN_OR_RETURN(AllReduceFigure big,
                       MeasureAllReduce(o.devices, o.allreduce_bytes / 4, o.reps));
  const double steps = static_cast<double>(CollectiveSteps(CollectiveKind::kAllReduce, o.devices));
  c.latency_seconds = tiny.seconds / steps;
  c.allreduce_seconds = big.seconds;
  c.allreduce_bytes_sent = big.bytes_sent;
  // What is left of the large all-reduce after its latency moves the bytes;
  // when the latency eats it all (a tiny buffer), the whole time does.
  double transfer = big.seconds - c.latency_seconds * steps;
  if (transfer <= 0.1 * big.seconds) transfer = big.seconds;
  c.bandwidth_bytes_per_s = big.bytes_sent / transfer;
  c.memory_bytes = PhysicalMemoryBytes() / o.devices;
  OFL_RETURN_IF_ERROR(CheckPositive("memcpy GB/s", c.memcpy_gbps));
  OFL_RETURN_IF_ERROR(CheckPositive("matmul FLOP/s", c.matmul_flops));
  OFL_RETURN_IF_ERROR(CheckPositive("all-reduce latency", c.latency_seconds));
  OFL_RETURN_IF_ERROR(CheckPositive("all-reduce bandwidth", c.bandwidth_bytes_per_s));
  OFL_RETURN_IF_ERROR(CheckPositive("memory per device", static_cast<double>(c.memory_bytes)));

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
  OFL_ASSIGN_OR_RETURN(Cluster cluster, Cluster::FromProto(p));
  c.cluster = std::move(cluster);

  std::ostringstream d;
  d << "# Cluster '" << o.name << "' measured on this machine by Calibrate "
    << "(oneflow_lite/api/calibrate.h) at " << c.measured_at << ".\n"
    << "# " << o.devices << " virtual CPU devices in one process; medians of " << o.reps
    << " runs after one warm-up.\n"
    << "# memcpy: " << o.num_threads << " thread(s) copying " << o.memcpy_bytes
    << " bytes: " << c.memcpy_gbps << " GB/s (ceiling of any in-process transfer).\n"
    << "# flops float32: the registered matmul op, " << o.matmul_size << "^3, through a Session "
    << "with " << o.num_threads << " kernel thread(s): " << c.matmul_flops / 1e9 << " GFLOP/s.\n"
    << "# latency: InProcessCommunicator all-reduce of " << o.devices << " floats, "
    << tiny.seconds * 1e6 << " us over " << steps << " ring steps.\n"
    << "# bandwidth: all-reduce of " << o.allreduce_bytes << " bytes per device in "
    << big.seconds * 1e3 << " ms; the busiest rank sent " << big.bytes_sent
    << " bytes (the communicator's own count).\n"
    << "# memory: physical memory / " << o.devices << " devices.\n";
  c.description = d.str();
  return c;
}

}  // namespace ofl
