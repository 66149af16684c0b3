// runtime_actor: the cost of the actor runtime itself (runtime/runtime.h),
// with kernels that do nothing.
//
//   actor_us_per_act  a chain of --tasks no-op COMPUTE tasks on one thread
//                     (rank 0, stream 0; task k reads task k-1's register,
//                     1 slot, 0 bytes), run for --iterations iterations:
//                     microseconds of Runtime::Run per act. Every act takes
//                     a Ready, enters the rank's task_arena, calls the
//                     kernel through KernelRegistry's std::function, and
//                     sends Ready on and Free back, all on the thread's
//                     local queue.
//   actor_us_per_hop  ping-pong between two threads: task A (stream 0)
//                     writes a 1-slot register that task B (stream 1)
//                     reads, so each iteration is one Ready hop A -> B and
//                     one Free hop B -> A through the mailboxes; microseconds
//                     per hop (Run time / 2 hops per iteration, the two acts
//                     included). Measured with threads that block at once
//                     (spin_us 0, the default) and with --spin-us polling.
//
// Each figure is the median over --reps runs after one warm-up run; the
// minimum is printed too. One JSON object goes to stdout, with the load
// average before and after (the development machine is shared: a load above
// its 2 cores means slower figures).
//
// Rerun: build/bench/runtime_actor [--tasks 10000 --iterations 20
//        --hop-iterations 20000 --reps 7 --spin-us 50]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "bench/bench_util.h"
#include "ops/kernel.h"
#include "runtime/runtime.h"

namespace {

using namespace ofl;

OFL_REGISTER_KERNEL("bench_noop", DeviceType::kCPU, [](KernelContext&) {});

struct Options {
  int64_t tasks = 10000;
  int64_t iterations = 20;
  int64_t hop_iterations = 20000;
  int reps = 7;
  int spin_us = 50;
};

struct Figure {
  double median_us = 0;
  double min_us = 0;
};

int64_t AddRegister(proto::Plan* plan, int64_t id) {
  auto* r = plan->add_registers();
  r->set_id(id);
  r->set_name("r" + std::to_string(id));
  r->mutable_desc()->mutable_shape()->add_dims(0);
  r->mutable_desc()->set_dtype("float32");
  r->set_num_slots(1);
  return id;
}

void AddTask(proto::Plan* plan, int64_t stream, int64_t input, int64_t output) {
  auto* t = plan->add_tasks();
  t->set_id(plan->tasks_size() - 1);
  t->set_kind(proto::TaskProto::COMPUTE);
  t->set_stream(stream);
  t->mutable_op_conf()->set_name("t" + std::to_string(t->id()));
  t->mutable_op_conf()->set_op_type("bench_noop");
  if (input >= 0) t->add_inputs(input);
  t->add_outputs(output);
}

// Task k writes register k and reads register k-1; all on `streams[k % n]`.
proto::Plan Chain(int64_t tasks, const std::vector<int64_t>& streams) {
  proto::Plan plan;
  plan.set_num_ranks(1);
  for (int64_t k = 0; k < tasks; ++k) {
    AddRegister(&plan, k);
    AddTask(&plan, streams[k % streams.size()], k - 1, k);
  }
  return plan;
}

// Microseconds per unit (acts or hops) of Run, over reps runs.
Figure Measure(const proto::Plan& plan, int spin_us, int64_t iterations, double units_per_iter,
               int reps) {
  RuntimeOptions options;
  options.spin_us = spin_us;
  options.num_threads = 1;
  auto rt = Runtime::Create(plan, options);
  if (!rt.ok()) {
    std::fprintf(stderr, "runtime_actor: %s\n", rt.status().message().c_str());
    std::exit(2);
  }
  std::vector<double> us;
  for (int rep = -1; rep < reps; ++rep) {
    const auto start = std::chrono::steady_clock::now();
    auto result = rt.value()->Run(iterations, {}, {});
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!result.ok()) {
      std::fprintf(stderr, "runtime_actor: %s\n", result.status().message().c_str());
      std::exit(2);
    }
    int64_t acts = 0;
    for (int64_t n : result.value().act_counts) acts += n;
    if (acts != plan.tasks_size() * iterations) {
      std::fprintf(stderr, "runtime_actor: %ld acts, expected %ld\n", static_cast<long>(acts),
                   static_cast<long>(plan.tasks_size() * iterations));
      std::exit(2);
    }
    if (rep >= 0) us.push_back(seconds * 1e6 / (units_per_iter * iterations));
  }
  std::sort(us.begin(), us.end());
  return {us[us.size() / 2], us.front()};
}

bool ParseArgs(int argc, char** argv, Options* o) {
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const long value = std::strtol(argv[i + 1], nullptr, 10);
    if (value <= 0 && flag != "--spin-us") return false;
    if (flag == "--tasks")
      o->tasks = value;
    else if (flag == "--iterations")
      o->iterations = value;
    else if (flag == "--hop-iterations")
      o->hop_iterations = value;
    else if (flag == "--reps")
      o->reps = static_cast<int>(value);
    else if (flag == "--spin-us")
      o->spin_us = static_cast<int>(value);
    else
      return false;
  }
  return argc % 2 == 1;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!ParseArgs(argc, argv, &o)) {
    std::fprintf(stderr,
                 "usage: runtime_actor [--tasks N] [--iterations N] [--hop-iterations N] "
                 "[--reps N] [--spin-us N]\n");
    return 1;
  }
  const std::string load_before = bench::LoadAverage();
  const Figure act = Measure(Chain(o.tasks, {0}), 0, o.iterations, o.tasks, o.reps);
  const proto::Plan ping_pong = Chain(2, {0, 1});
  const Figure hop = Measure(ping_pong, 0, o.hop_iterations, 2, o.reps);
  const Figure hop_spin = Measure(ping_pong, o.spin_us, o.hop_iterations, 2, o.reps);

  std::printf("{\n  \"benchmark\": \"runtime_actor\",\n");
  std::printf("  \"actor_us_per_act\": %.4f,\n  \"actor_us_per_act_min\": %.4f,\n", act.median_us,
              act.min_us);
  std::printf("  \"actor_us_per_hop\": %.3f,\n  \"actor_us_per_hop_min\": %.3f,\n", hop.median_us,
              hop.min_us);
  std::printf("  \"actor_us_per_hop_spin\": %.3f,\n  \"actor_us_per_hop_spin_min\": %.3f,\n",
              hop_spin.median_us, hop_spin.min_us);
  std::printf("  \"tasks\": %ld,\n  \"iterations\": %ld,\n  \"hop_iterations\": %ld,\n",
              static_cast<long>(o.tasks), static_cast<long>(o.iterations),
              static_cast<long>(o.hop_iterations));
  std::printf("  \"reps\": %d,\n  \"spin_us\": %d,\n  \"cores\": %u,\n", o.reps, o.spin_us,
              std::thread::hardware_concurrency());
  std::printf("  \"loadavg_before\": \"%s\",\n  \"loadavg_after\": \"%s\"\n}\n",
              load_before.c_str(), bench::LoadAverage().c_str());
  return 0;
}
