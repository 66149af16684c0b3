// Program and Session: the C++ facade's one-device entry (DESIGN.md section 2).
// A Program collects a logical graph (inputs, variables, ops) and appends
// backward and optimizer when asked. A Session is the one-rank use of the one
// session class (api/distributed_session.h): the graph on a placement of one
// CPU device (rank 0) with every tensor whole, lowered by the one lowering
// (graph/distributed_lowering.h) and run by the actor runtime; one Run is one
// iteration. A Program and a Session are used by one thread at a time (a Run
// while another thread's Run is in progress fails with an error).
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <string>

#include "graph/op_graph.h"
#include "graph/optimizer_pass.h"
#include "graph/strategy.h"
#include "oneflow_lite/api/distributed_session.h"
#include "ops/parallel.h"

// Threads: the runtime's one actor thread per stream runs the kernels in a
// oneTBB arena of SessionOptions::num_threads (runtime/runtime.h, one rank gets
// them all) with OpenMP (oneDNN's pool) set to as many on that thread; the
// Session sets OpenBLAS's count too (ops/parallel.h KernelThreads). Another
// live session does not lower them.
//
// Errors name the op and the tensor: a rejected feed or variable as "run:
// input 'x' expects shape ...", a kernel's as the runtime reports it, "rank 0:
// task 12 (embedding 'wte'): ...". What a failed Run leaves in the variables
// is the runtime's rule (runtime/runtime.h Run).

namespace ofl {

struct SessionOptions {
  int num_threads = 0;  // kernel threads; 0 = every core of the machine
  // RuntimeOptions::timeout: the longest an actor thread waits for a
  // message from another thread before the step fails naming the task. The
  // one-device plan has one stream, so one thread runs every task and
  // never waits on another: this bounds only a plan of several streams
  // (kept generous so that no long kernel trips it). Must be positive.
  std::chrono::milliseconds timeout{std::chrono::minutes(10)};
  // A failed Run restores every variable it updated (RuntimeOptions::transactional).
  bool transactional = true;
  // Non-empty: every Run writes a Chrome trace of its acts there
  // (RuntimeOptions::trace_path; one "X" event per task, named
  // "<op_type> '<op name>'"), for per-op profiles (bench/op_profile.py).
  std::string trace_path;
  // Registers the dataflow orders share one arena (RuntimeOptions::plan_memory).
  bool plan_memory = true;
  // Every Run keeps its acts (start and end of each task's act) for
  // last_acts(), e.g. for kernel times (api/calibrate_kernels.h).
  bool record_acts = false;
  bool fuse_matmul_bias = true;  // matmul + bias_add as one task (graph/matmul_bias_fusion.h)
};

class Program {
 public:
  OpGraph& graph() { return graph_; }
  const OpGraph& graph() const { return graph_; }
  // Sets the loss, appends its backward and the optimizer updates. Once only.
  Status Minimize(const std::string& loss, const OptimizerConf& optimizer);
  // Gradient tensor of each trainable variable, after Minimize.
  const std::map<std::string, std::string>& gradients() const { return gradients_; }

 private:
  OpGraph graph_;
  std::map<std::string, std::string> gradients_;
  bool minimized_ = false;
};

// The one-device Strategy (cpu rank 0, every tensor B) and the session
// options a Session runs `options` with: one slot per register, one
// micro-batch, no gradient buckets, a world of one process.
Maybe<Strategy> OneDeviceStrategy(const OpGraph& graph);
DistributedOptions OneDeviceOptions(const SessionOptions& options);

// A DistributedSession of one device. Run (inherited: one Run path for every
// session) feeds every input (by name, of its declared shape and dtype) and
// returns copies of `fetches` in order: any tensor of the graph by name
// (inputs, intermediate values, outputs) as the step made it, or a variable
// as it is after the step (in-place updates included).
class Session : public DistributedSession {
 public:
  static Maybe<std::unique_ptr<Session>> Create(const OpGraph& graph,
                                                const SessionOptions& options = {});

  using DistributedSession::kernel_threads;
  int kernel_threads() const { return kernel_threads(0); }  // the device's
  int64_t peak_bytes() const { return PeakBytes()[0]; }     // the device's

 private:
  Session() = default;
  std::unique_ptr<KernelThreads> threads_;
};

}  // namespace ofl
