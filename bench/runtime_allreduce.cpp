// runtime_allreduce: how close the in-process all-reduce
// (runtime/inprocess_communicator.h) comes to the machine's memory bandwidth.
//
//   memcpy_gbps            --memcpy-threads threads (default 2, the machine's
//                          cores) each memcpy one equal part of a --memcpy-mb
//                          MiB buffer (default 256) into another, both touched
//                          beforehand: bytes copied / seconds, 1e9 bytes per
//                          GB; median of every rep, measured before and after
//                          the all-reduces (so a load change shows up in
//                          memcpy_gbps_first / _last).
//   allreduce_ms[p]        an InProcessGroup of p ranks, one std::thread per
//                          rank, each all-reducing its own --mb MiB float32
//                          buffer (sum) through group.Rank(r)->AllReduce:
//                          time from starting the p threads to joining them,
//                          median of --reps runs after --warmup runs. Every
//                          buffer is refilled before each run and every
//                          result checked (neither timed); after the refill
//                          an --evict-mb MiB scratch buffer (default 128, 4x
//                          the development machine's L3) is written, so that
//                          the run starts from memory, like the memcpy
//                          (--evict-mb 0: the refill's tail stays in cache,
//                          and p = 2 then beats the "bound").
//   allreduce_bound_ms[p]  p * (--mb MiB / memcpy_gbps): the time a
//                          memory-bound in-process all-reduce cannot beat (p
//                          ranks each end up writing a full buffer).
//   allreduce_efficiency[p] bound / measured (1.0 = at memcpy speed).
//
// One JSON object goes to stdout (bench/run.sh runtime merges it into
// bench/results/runtime.json). Exit status 0; 2 when a result is wrong or a
// collective fails; 1 on bad arguments.
//
// Rerun: bench/run.sh runtime, or build/bench/runtime_allreduce [--mb 64
//        --devices 2,4 --reps 9 --warmup 2 --memcpy-mb 256 --memcpy-threads 2
//        --evict-mb 128]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench/bench_util.h"
#include "runtime/inprocess_communicator.h"

namespace {

using namespace ofl;

constexpr double kMiB = 1024.0 * 1024.0;

struct Options {
  int64_t mb = 64;
  std::vector<int64_t> devices = {2, 4};
  int reps = 9;
  int warmup = 2;
  int64_t memcpy_mb = 256;
  int memcpy_threads = 2;
  int64_t evict_mb = 128;  // 0: keep whatever the refill left in cache
};

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t h = v.size() / 2;
  return v.size() % 2 ? v[h] : 0.5 * (v[h - 1] + v[h]);
}

// Seconds from starting `n` threads running fn(i) to joining them.
double TimeThreads(int n, const std::function<void(int)>& fn) {
  std::vector<std::thread> threads;
  threads.reserve(n);
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) threads.emplace_back(fn, i);
  for (auto& t : threads) t.join();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// GB/s of `threads` threads each copying 1/threads of `bytes`, one per rep.
std::vector<double> MeasureMemcpy(char* dst, const char* src, int64_t bytes, int threads,
                                  int reps) {
  const int64_t part = bytes / threads;
  std::vector<double> gbps;
  for (int rep = 0; rep < reps; ++rep) {
    const double s = TimeThreads(threads, [&](int i) {
      const int64_t begin = i * part, end = i + 1 == threads ? bytes : begin + part;
      std::memcpy(dst + begin, src + begin, end - begin);
    });
    gbps.push_back(static_cast<double>(bytes) / s / 1e9);
  }
  return gbps;
}

struct AllReduceFigure {
  std::vector<double> ms;
  std::string error;
};

float Value(int64_t i, int64_t rank) { return static_cast<float>((i & 15) + rank); }

// Writes `scratch` whole, so that the last-level cache holds none of the
// all-reduce's buffers (32 MiB L3 on the development machine).
void EvictCaches(std::vector<char>* scratch) {
  static char round = 0;
  std::memset(scratch->data(), ++round, scratch->size());
}

AllReduceFigure MeasureAllReduce(int64_t p, int64_t count, int warmup, int reps, bool warm,
                                 std::vector<char>* scratch) {
  AllReduceFigure fig;
  InProcessGroup group(p, std::chrono::milliseconds(60000));
  std::vector<std::vector<float>> buffers(p, std::vector<float>(count));
  const float rank_sum = static_cast<float>(p * (p - 1) / 2);
  for (int rep = -warmup; rep < reps && fig.error.empty(); ++rep) {
    for (int64_t r = 0; r < p; ++r) {
      float* b = buffers[r].data();
      for (int64_t i = 0; i < count; ++i) b[i] = Value(i, r);
    }
    if (!warm) EvictCaches(scratch);
    std::vector<std::string> errors(p);
    const double s = TimeThreads(static_cast<int>(p), [&](int r) {
      Status st = group.Rank(r)->AllReduce(buffers[r].data(), count, DataType::kFloat32, "bench");
      if (!st.ok()) errors[r] = st.message();
    });
    for (int64_t r = 0; r < p && fig.error.empty(); ++r) {
      if (!errors[r].empty()) {
        fig.error = errors[r];
        break;
      }
      const float* b = buffers[r].data();
      for (int64_t i = 0; i < count; ++i) {
        const float want = static_cast<float>(p * (i & 15)) + rank_sum;
        if (b[i] != want) {
          std::ostringstream os;
          os << "p=" << p << " rank " << r << " element " << i << ": " << b[i] << ", expected "
             << want;
          fig.error = os.str();
          break;
        }
      }
    }
    if (rep >= 0) fig.ms.push_back(s * 1e3);
  }
  return fig;
}

std::string JsonString(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c == '\n' ? ' ' : c;
  }
  return out + "\"";
}

std::string Join(const std::vector<double>& v, const char* fmt) {
  std::string out = "[";
  char buf[64];
  for (size_t i = 0; i < v.size(); ++i) {
    std::snprintf(buf, sizeof buf, fmt, v[i]);
    out += (i ? ", " : "") + std::string(buf);
  }
  return out + "]";
}

bool ParseArgs(int argc, char** argv, Options* o) {
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    const long n = std::strtol(value.c_str(), nullptr, 10);
    if (flag == "--devices") {
      o->devices.clear();
      std::stringstream ss(value);
      std::string item;
      while (std::getline(ss, item, ',')) {
        const long p = std::strtol(item.c_str(), nullptr, 10);
        if (p < 1) return false;
        o->devices.push_back(p);
      }
      continue;
    }
    if (flag == "--evict-mb" && n >= 0) {
      o->evict_mb = n;
      continue;
    }
    if (n <= 0) return false;
    if (flag == "--mb")
      o->mb = n;
    else if (flag == "--reps")
      o->reps = static_cast<int>(n);
    else if (flag == "--warmup")
      o->warmup = static_cast<int>(n);
    else if (flag == "--memcpy-mb")
      o->memcpy_mb = n;
    else if (flag == "--memcpy-threads")
      o->memcpy_threads = static_cast<int>(n);
    else
      return false;
  }
  return argc % 2 == 1 && !o->devices.empty();
}

// The all-reduce fields of the JSON, per device count (null where it
// failed); the errors joined, empty when none. `gbps`: memcpy's median.
std::string PrintAllReduceFigures(const Options& o, const std::map<int64_t, AllReduceFigure>& figs,
                                  double gbps) {
  std::string error;
  std::string eff = "{", ms = "{", bound = "{", runs = "{", gbs = "{";
  char buf[128];
  bool first_p = true;
  for (const auto& [p, fig] : figs) {
    const char* sep = first_p ? "" : ", ";
    first_p = false;
    if (!fig.error.empty()) {
      error += (error.empty() ? "" : "; ") + fig.error;
      std::snprintf(buf, sizeof buf, "%s\"%ld\": null", sep, static_cast<long>(p));
      eff += buf;
      ms += buf;
      runs += buf;
      gbs += buf;
    } else {
      const double med = Median(fig.ms);
      const double bound_ms = p * (o.mb * kMiB / (gbps * 1e9)) * 1e3;
      std::snprintf(buf, sizeof buf, "%s\"%ld\": %.3f", sep, static_cast<long>(p), bound_ms / med);
      eff += buf;
      std::snprintf(buf, sizeof buf, "%s\"%ld\": %.3f", sep, static_cast<long>(p), med);
      ms += buf;
      // Per-rank buffer bytes / time (the "algorithm bandwidth" of NCCL's tests).
      std::snprintf(buf, sizeof buf, "%s\"%ld\": %.3f", sep, static_cast<long>(p),
                    o.mb * kMiB / (med * 1e-3) / 1e9);
      gbs += buf;
      runs += std::string(sep) + "\"" + std::to_string(p) + "\": " + Join(fig.ms, "%.3f");
    }
    const double bound_ms = p * (o.mb * kMiB / (gbps * 1e9)) * 1e3;
    std::snprintf(buf, sizeof buf, "%s\"%ld\": %.3f", sep, static_cast<long>(p), bound_ms);
    bound += buf;
  }
  std::printf("  \"allreduce_efficiency\": %s},\n", eff.c_str());
  std::printf("  \"allreduce_ms\": %s},\n", ms.c_str());
  std::printf("  \"allreduce_bound_ms\": %s},\n", bound.c_str());
  std::printf("  \"allreduce_algbw_gbps\": %s},\n", gbs.c_str());
  std::printf("  \"allreduce_runs_ms\": %s},\n", runs.c_str());
  return error;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!ParseArgs(argc, argv, &o)) {
    std::fprintf(stderr,
                 "usage: runtime_allreduce [--mb 64] [--devices 2,4] [--reps 9] [--warmup 2] "
                 "[--memcpy-mb 256] [--memcpy-threads 2] [--evict-mb 128]\n");
    return 1;
  }
  const std::string load_before = bench::LoadAverage();
  const int64_t copy_bytes = o.memcpy_mb * static_cast<int64_t>(kMiB);
  std::vector<char> src(copy_bytes, 1), dst(copy_bytes, 0);
  MeasureMemcpy(dst.data(), src.data(), copy_bytes, o.memcpy_threads, 2);  // warm-up
  const std::vector<double> first =
      MeasureMemcpy(dst.data(), src.data(), copy_bytes, o.memcpy_threads, o.reps);
  const std::vector<double> one_thread =
      MeasureMemcpy(dst.data(), src.data(), copy_bytes, 1, o.reps);

  const int64_t count = o.mb * static_cast<int64_t>(kMiB) / 4;
  std::map<int64_t, AllReduceFigure> figs;
  std::vector<char> scratch(o.evict_mb * static_cast<int64_t>(kMiB));
  for (int64_t p : o.devices) {
    figs[p] = MeasureAllReduce(p, count, o.warmup, o.reps, o.evict_mb == 0, &scratch);
  }

  const std::vector<double> last =
      MeasureMemcpy(dst.data(), src.data(), copy_bytes, o.memcpy_threads, o.reps);
  std::vector<double> all = first;
  all.insert(all.end(), last.begin(), last.end());
  const double gbps = Median(all);

  std::printf("{\n  \"benchmark\": \"runtime_allreduce\",\n");
  std::printf("  \"memcpy_gbps\": %.3f,\n  \"memcpy_gbps_first\": %.3f,\n", gbps, Median(first));
  std::printf("  \"memcpy_gbps_last\": %.3f,\n  \"memcpy_1thread_gbps\": %.3f,\n", Median(last),
              Median(one_thread));
  std::printf("  \"memcpy_mb\": %ld,\n  \"memcpy_threads\": %d,\n", static_cast<long>(o.memcpy_mb),
              o.memcpy_threads);
  std::printf("  \"mb\": %ld,\n  \"dtype\": \"float32\",\n  \"reps\": %d,\n  \"warmup\": %d,\n",
              static_cast<long>(o.mb), o.reps, o.warmup);
  std::printf("  \"evict_mb\": %ld,\n", static_cast<long>(o.evict_mb));
  const std::string error = PrintAllReduceFigures(o, figs, gbps);
  std::printf("  \"memcpy_runs_gbps\": %s,\n", Join(all, "%.3f").c_str());
  std::printf("  \"cores\": %u,\n", std::thread::hardware_concurrency());
  std::printf("  \"error\": %s,\n", error.empty() ? "null" : JsonString(error).c_str());
  std::printf("  \"loadavg_before\": \"%s\",\n  \"loadavg_after\": \"%s\"\n}\n",
              load_before.c_str(), bench::LoadAverage().c_str());
  return error.empty() ? 0 : 2;
}
