// Session: the C++ facade (DESIGN.md section 2). A Program collects a logical
// graph (inputs, variables, ops), appends backward and optimizer when asked,
// and compiles into a Session that runs it on one device: the graph is lowered
// to a one-rank Plan (graph/lowering.h) and run by the actor runtime
// (runtime/runtime.h), the same executor a DistributedSession uses for several
// ranks; one Run is one iteration. api/ is the only layer that sees both graph/
// and runtime/. A Program and a Session are used by one thread at a time (a
// Run while another thread's Run is in progress fails with an error).
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "graph/op_graph.h"
#include "graph/optimizer_pass.h"
#include "oneflow_lite/core/proto/plan.pb.h"
#include "ops/parallel.h"
#include "runtime/runtime.h"

// Threads: the runtime's one actor thread per stream runs the kernels in a
// oneTBB arena of SessionOptions::num_threads (runtime/runtime.h, one rank gets
// them all), and the Session bounds every kernel thread pool of the process
// (oneTBB, OpenBLAS, oneDNN's OpenMP) to that many while it lives
// (ops/parallel.h KernelThreads).
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
  // single-device plan has one stream, so one thread runs every task and
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

class Session {
 public:
  static Maybe<std::unique_ptr<Session>> Create(const OpGraph& graph,
                                                const SessionOptions& options = {});

  // One step: feeds every input (each by name, of its declared shape and
  // dtype), returns copies of `fetches` in order: any tensor of the graph by
  // name (inputs, intermediate values, outputs) as the step made it, or a
  // variable as it is after the step (in-place updates included).
  Status Run(const std::map<std::string, Tensor>& feeds, const std::vector<std::string>& fetches,
             std::vector<Tensor>* results);
  Maybe<Tensor> GetVariable(const std::string& name) const;  // a copy
  Status SetVariable(const std::string& name, const Tensor& value);
  // Run fails at the first op whose output holds a NaN or Inf, naming it.
  void set_detect_anomaly(bool on) { runtime_->set_detect_anomaly(on); }
  const proto::Plan& plan() const { return plan_; }
  int kernel_threads() const { return runtime_->kernel_threads(0); }
  int64_t peak_bytes() const { return runtime_->peak_bytes()[0]; }
  // The acts of the last Run when SessionOptions::record_acts (task ids
  // index plan().tasks()); else empty.
  const std::vector<ActRecord>& last_acts() const { return last_acts_; }

 private:
  Session() = default;
  Status CheckFeeds(const std::map<std::string, Tensor>& feeds) const;

  std::unique_ptr<KernelThreads> threads_;
  proto::Plan plan_;
  std::unique_ptr<Runtime> runtime_;
  std::map<std::string, TensorDesc> inputs_;     // fed SOURCE registers
  std::map<std::string, TensorDesc> variables_;  // persistent registers
  std::set<std::string> fetchable_;              // every other data register
  std::mutex run_mutex_;                         // held by Run: a second thread's Run fails
  std::vector<ActRecord> last_acts_;
};

}  // namespace ofl
