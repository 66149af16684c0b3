// runtime_pipeline: does a 2-slot register let the actor runtime
// (runtime/runtime.h) load batch i+1 while it computes on batch i?
//
// The plan (one rank, built here by hand):
//   stream 0  load     "bench_load_batch", a kernel registered by this binary:
//                      it "decodes" a [--batch, --dim] float32 batch from a
//                      synthetic 8-bit source, each value the mean of --draws
//                      bytes drawn with Philox4x32-10 (oneflow_lite/core/
//                      random.h, keyed by the iteration), then normalises
//                      every row to mean 0 and variance 1. Real CPU work on
//                      one thread, no sleep.
//             batch    its output register: --slots slots (1 or 2)
//   stream 1  compute  --layers matmuls h_k = h_{k-1} x W (the project's
//                      "matmul" op, oneDNN; h_0 = batch, W a [dim, dim]
//                      variable scaled by 1/sqrt(dim)), then "add"(h_L, batch):
//                      the residual makes the compute hold the batch's slot
//                      until its last op, so 1 slot serialises load and
//                      compute and 2 slots let them overlap.
// RuntimeOptions::num_threads = 1 in every timing: the rank's kernel share is
// one thread, so each stream's kernels run on its own actor thread only
// (oneDNN's OpenMP set to 1 thread, the rank's task_arena has one master
// slot per kernel stream and no worker). With 2 cores that is one core for
// the loader and one for the compute.
//
//   load_ms        a plan of the loader task alone (stream 0).
//   compute_ms     the compute alone (stream 1), its batch a variable.
//   step_ms[s]     the whole plan with `s` slots in the batch register.
//   pipeline_ratio step_ms[2] / max(load_ms, compute_ms): 1.0 = perfect
//                  overlap, 2.0 = none (when load = compute).
// Each figure is a Runtime::Run of --iterations iterations divided by the
// iterations (fill and drain of the pipeline included), median over --reps
// runs after one warm-up run, every plan with its own Runtime.
//
// Unless --draws is given, --draws is calibrated first so that load_ms comes
// within about 5% of compute_ms: the loader's cost is linear in it, so two
// probes (8 and 32 draws) give the line, and up to two corrections follow
// while the measured load misses by more than 5% (calibration_draws_load_ms
// lists the probes as [draws, load ms]).
//
// One JSON object goes to stdout. Exit status 0; 2 when a run fails; 1 on
// bad arguments.
//
// Rerun: bench/run.sh runtime, or build/bench/runtime_pipeline [--batch 256
//        --dim 1024 --layers 4 --iterations 30 --reps 5 --draws N]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "bench/bench_util.h"
#include "oneflow_lite/core/random.h"
#include "ops/kernel.h"
#include "runtime/runtime.h"

namespace {

using namespace ofl;

constexpr uint64_t kSeed = 20240607;

// The loader: out[b, j] = mean of `draws` Philox bytes, rows normalised.
void LoadBatch(KernelContext& kc) {
  Tensor& out = kc.out(0);
  const int64_t rows = out.shape()[0], cols = out.shape()[1];
  const int64_t draws = kc.attr().Get<int64_t>("draws");
  float* y = out.data<float>();
  const uint64_t stream = static_cast<uint64_t>(kc.iteration);
  PhiloxCounter words{};
  for (int64_t b = 0; b < rows; ++b) {
    float* row = y + b * cols;
    double sum = 0;
    for (int64_t j = 0; j < cols; ++j) {
      const uint64_t first = static_cast<uint64_t>(b * cols + j) * draws;
      uint32_t acc = 0;
      for (int64_t t = 0; t < draws; ++t) {
        const uint64_t k = first + t;  // byte k of the source
        if (t == 0 || k % 16 == 0) words = RandomBits(kSeed, stream, k / 16);
        acc += (words[(k % 16) / 4] >> (8 * (k % 4))) & 0xff;
      }
      row[j] = static_cast<float>(acc) / static_cast<float>(draws);
      sum += row[j];
    }
    const double mean = sum / cols;
    double var = 0;
    for (int64_t j = 0; j < cols; ++j) var += (row[j] - mean) * (row[j] - mean);
    const float scale = static_cast<float>(1.0 / std::sqrt(var / cols + 1e-5));
    for (int64_t j = 0; j < cols; ++j) row[j] = static_cast<float>((row[j] - mean) * scale);
  }
}

OFL_REGISTER_KERNEL("bench_load_batch", DeviceType::kCPU, LoadBatch);

struct Options {
  int64_t batch = 256;
  int64_t dim = 1024;
  int64_t layers = 4;
  int64_t iterations = 30;
  int reps = 5;
  int64_t draws = 0;  // 0: calibrate
};

enum class Part { kLoad, kCompute, kBoth };

int64_t AddRegister(proto::Plan* plan, const std::string& name, std::vector<int64_t> dims,
                    int64_t slots, bool persistent = false) {
  auto* r = plan->add_registers();
  r->set_id(plan->registers_size() - 1);
  r->set_name(name);
  for (int64_t d : dims) r->mutable_desc()->mutable_shape()->add_dims(d);
  r->mutable_desc()->set_dtype("float32");
  r->set_num_slots(slots);
  r->set_persistent(persistent);
  int64_t n = 4;
  for (int64_t d : dims) n *= d;
  r->set_bytes(n);
  return r->id();
}

proto::TaskProto* AddTask(proto::Plan* plan, proto::TaskProto::Kind kind, int64_t stream,
                          const std::string& name, const std::string& op_type,
                          std::vector<int64_t> inputs, std::vector<int64_t> outputs) {
  auto* t = plan->add_tasks();
  t->set_id(plan->tasks_size() - 1);
  t->set_kind(kind);
  t->set_stream(stream);
  t->mutable_op_conf()->set_name(name);
  t->mutable_op_conf()->set_op_type(op_type);
  for (int64_t i : inputs) t->add_inputs(i);
  for (int64_t o : outputs) t->add_outputs(o);
  return t;
}

proto::Plan MakePlan(const Options& o, Part part, int64_t slots, int64_t draws) {
  proto::Plan plan;
  plan.set_num_ranks(1);
  int64_t batch;
  if (part == Part::kCompute) {
    batch = AddRegister(&plan, "x", {o.batch, o.dim}, 1, /*persistent=*/true);
    AddTask(&plan, proto::TaskProto::VARIABLE, 1, "x", "", {}, {batch});
  } else {
    batch = AddRegister(&plan, "batch", {o.batch, o.dim}, slots);
    auto* load =
        AddTask(&plan, proto::TaskProto::COMPUTE, 0, "load", "bench_load_batch", {}, {batch});
    (*load->mutable_op_conf()->mutable_attrs())["draws"].set_i(draws);
  }
  if (part == Part::kLoad) return plan;
  const int64_t w = AddRegister(&plan, "w", {o.dim, o.dim}, 1, /*persistent=*/true);
  AddTask(&plan, proto::TaskProto::VARIABLE, 1, "w", "", {}, {w});
  int64_t h = batch;
  for (int64_t k = 1; k <= o.layers; ++k) {
    const std::string name = "mm" + std::to_string(k);
    const int64_t next = AddRegister(&plan, name + "/out_0", {o.batch, o.dim}, 1);
    AddTask(&plan, proto::TaskProto::COMPUTE, 1, name, "matmul", {h, w}, {next});
    h = next;
  }
  const int64_t out = AddRegister(&plan, "residual/out_0", {o.batch, o.dim}, 1);
  AddTask(&plan, proto::TaskProto::COMPUTE, 1, "residual", "add", {h, batch}, {out});
  return plan;
}

Tensor NormalTensor(int64_t rows, int64_t cols, double scale, uint64_t stream) {
  Tensor t(Shape({rows, cols}), DataType::kFloat32);
  float* p = t.data<float>();
  for (int64_t i = 0; i < rows * cols; ++i)
    p[i] = static_cast<float>(scale * Normal(kSeed, stream, static_cast<uint64_t>(i)));
  return t;
}

struct Timing {
  double median_ms = 0, min_ms = 0;
  std::vector<double> runs_ms;
};

[[noreturn]] void Fail(const std::string& what, const Status& s) {
  std::fprintf(stderr, "runtime_pipeline: %s: %s\n", what.c_str(), s.message().c_str());
  std::exit(2);
}

// ms per iteration of Run(iterations), median over reps after one warm-up.
Timing Measure(const Options& o, Part part, int64_t slots, int64_t draws, int reps) {
  RuntimeOptions options;
  options.num_threads = 1;
  auto rt = Runtime::Create(MakePlan(o, part, slots, draws), options);
  if (!rt.ok()) Fail("Create", rt.status());
  Runtime& runtime = *rt.value();
  if (part != Part::kLoad) {
    Status s = runtime.SetVariable("w", 0, NormalTensor(o.dim, o.dim, 1 / std::sqrt(o.dim), 1));
    if (!s.ok()) Fail("SetVariable w", s);
  }
  if (part == Part::kCompute) {
    Status s = runtime.SetVariable("x", 0, NormalTensor(o.batch, o.dim, 1.0, 2));
    if (!s.ok()) Fail("SetVariable x", s);
  }
  Timing t;
  for (int rep = -1; rep < reps; ++rep) {
    const auto start = std::chrono::steady_clock::now();
    auto result = runtime.Run(o.iterations, {}, {});
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    if (!result.ok()) Fail("Run", result.status());
    if (rep >= 0) t.runs_ms.push_back(ms / o.iterations);
  }
  std::vector<double> sorted = t.runs_ms;
  std::sort(sorted.begin(), sorted.end());
  const size_t h = sorted.size() / 2;
  t.median_ms = sorted.size() % 2 ? sorted[h] : 0.5 * (sorted[h - 1] + sorted[h]);
  t.min_ms = sorted.front();
  return t;
}

std::string Runs(const std::vector<double>& v) {
  std::string out = "[";
  char buf[32];
  for (size_t i = 0; i < v.size(); ++i) {
    std::snprintf(buf, sizeof buf, "%s%.3f", i ? ", " : "", v[i]);
    out += buf;
  }
  return out + "]";
}

bool ParseArgs(int argc, char** argv, Options* o) {
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const long n = std::strtol(argv[i + 1], nullptr, 10);
    if (n <= 0) return false;
    if (flag == "--batch")
      o->batch = n;
    else if (flag == "--dim")
      o->dim = n;
    else if (flag == "--layers")
      o->layers = n;
    else if (flag == "--iterations")
      o->iterations = n;
    else if (flag == "--reps")
      o->reps = static_cast<int>(n);
    else if (flag == "--draws")
      o->draws = n;
    else
      return false;
  }
  return argc % 2 == 1;
}

// Adds `more`'s runs to `t` and recomputes its median and minimum.
void MergeRuns(Timing* t, const Timing& more) {
  t->runs_ms.insert(t->runs_ms.end(), more.runs_ms.begin(), more.runs_ms.end());
  std::sort(t->runs_ms.begin(), t->runs_ms.end());
  const auto& v = t->runs_ms;
  const size_t h = v.size() / 2;
  t->median_ms = v.size() % 2 ? v[h] : 0.5 * (v[h - 1] + v[h]);
  t->min_ms = v.front();
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!ParseArgs(argc, argv, &o)) {
    std::fprintf(stderr,
                 "usage: runtime_pipeline [--batch 256] [--dim 1024] [--layers 4] "
                 "[--iterations 30] [--reps 5] [--draws N]\n");
    return 1;
  }
  const std::string load_before = bench::LoadAverage();
  Timing compute = Measure(o, Part::kCompute, 1, 0, o.reps);
  const bool calibrated = o.draws == 0;
  std::vector<std::pair<int64_t, double>> calibration;  // (draws, load ms)
  if (calibrated) {
    // load(d) ~ a + b * d: two probes, then solve load(d) = compute.
    Options probe = o;
    probe.iterations = std::max<int64_t>(5, o.iterations / 3);
    const int64_t d1 = 8, d2 = 32;
    const double l1 = Measure(probe, Part::kLoad, 1, d1, 3).median_ms;
    const double l2 = Measure(probe, Part::kLoad, 1, d2, 3).median_ms;
    calibration = {{d1, l1}, {d2, l2}};
    const double b = (l2 - l1) / (d2 - d1), a = l1 - b * d1;
    o.draws = std::max<int64_t>(1, std::llround((compute.median_ms - a) / b));
  }
  Timing load = Measure(o, Part::kLoad, 1, o.draws, o.reps);
  for (int fix = 0;
       fix < 2 && calibrated && std::abs(load.median_ms / compute.median_ms - 1) > 0.05; ++fix) {
    // Corrections: the cost is nearly proportional to draws.
    calibration.push_back({o.draws, load.median_ms});
    o.draws = std::max<int64_t>(
        1, std::llround(static_cast<double>(o.draws) * compute.median_ms / load.median_ms));
    load = Measure(o, Part::kLoad, 1, o.draws, o.reps);
  }
  // Compute again, next to the others in time, and keep all its runs.
  MergeRuns(&compute, Measure(o, Part::kCompute, 1, 0, o.reps));
  const Timing one = Measure(o, Part::kBoth, 1, o.draws, o.reps);
  const Timing two = Measure(o, Part::kBoth, 2, o.draws, o.reps);
  const double bound = std::max(load.median_ms, compute.median_ms);

  std::printf("{\n  \"benchmark\": \"runtime_pipeline\",\n");
  std::printf("  \"pipeline_ratio\": %.4f,\n", two.median_ms / bound);
  std::printf("  \"pipeline_ratio_1slot\": %.4f,\n", one.median_ms / bound);
  std::printf("  \"load_ms\": %.3f,\n  \"compute_ms\": %.3f,\n", load.median_ms, compute.median_ms);
  std::printf("  \"step_ms_2slots\": %.3f,\n  \"step_ms_1slot\": %.3f,\n", two.median_ms,
              one.median_ms);
  std::printf("  \"load_over_compute\": %.4f,\n", load.median_ms / compute.median_ms);
  std::printf(
      "  \"min_ms\": {\"load\": %.3f, \"compute\": %.3f, \"2slots\": %.3f, "
      "\"1slot\": %.3f},\n",
      load.min_ms, compute.min_ms, two.min_ms, one.min_ms);
  std::printf("  \"runs_ms\": {\"load\": %s, \"compute\": %s, \"2slots\": %s, \"1slot\": %s},\n",
              Runs(load.runs_ms).c_str(), Runs(compute.runs_ms).c_str(), Runs(two.runs_ms).c_str(),
              Runs(one.runs_ms).c_str());
  std::printf("  \"batch\": %ld,\n  \"dim\": %ld,\n  \"layers\": %ld,\n  \"draws\": %ld,\n",
              static_cast<long>(o.batch), static_cast<long>(o.dim), static_cast<long>(o.layers),
              static_cast<long>(o.draws));
  std::printf("  \"draws_calibrated\": %s,\n", calibrated ? "true" : "false");
  if (calibrated) {
    std::string probes;
    for (const auto& [draws, ms] : calibration) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%s[%ld, %.3f]", probes.empty() ? "" : ", ",
                    static_cast<long>(draws), ms);
      probes += buf;
    }
    std::printf("  \"calibration_draws_load_ms\": [%s],\n", probes.c_str());
  }
  std::printf("  \"iterations\": %ld,\n  \"reps\": %d,\n  \"num_threads\": 1,\n",
              static_cast<long>(o.iterations), o.reps);
  std::printf("  \"cores\": %u,\n", std::thread::hardware_concurrency());
  std::printf("  \"loadavg_before\": \"%s\",\n  \"loadavg_after\": \"%s\"\n}\n",
              load_before.c_str(), bench::LoadAverage().c_str());
  return 0;
}
