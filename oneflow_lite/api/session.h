// Session: the C++ facade (DESIGN.md section 2). A Program collects a
// logical graph (inputs, variables, ops), appends backward and optimizer
// when asked, and compiles into a Session that runs it. api/ is the only
// layer that sees both graph/ and runtime/. A Program and a Session are
// used by one thread at a time (a Run while another thread's Run is in
// progress fails with an error, it never races); a Session bounds the kernel thread pools to
// SessionOptions::num_threads while it lives.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "graph/op_graph.h"
#include "graph/optimizer_pass.h"
#include "oneflow_lite/core/proto/plan.pb.h"
#include "ops/parallel.h"
#include "runtime/sequential_executor.h"

namespace ofl {

struct SessionOptions {
  int num_threads = 0;  // kernel threads; 0 = every core of the machine
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

  Status Run(const std::map<std::string, Tensor>& feeds, const std::vector<std::string>& fetches,
             std::vector<Tensor>* results);
  Maybe<Tensor> GetVariable(const std::string& name) const { return executor_->GetVariable(name); }
  Status SetVariable(const std::string& name, const Tensor& value) {
    return executor_->SetVariable(name, value);
  }
  // Run fails at the first op whose output holds a NaN or Inf, naming it.
  void set_detect_anomaly(bool on) { executor_->set_detect_anomaly(on); }
  const proto::Plan& plan() const { return plan_; }

 private:
  Session() = default;
  std::unique_ptr<KernelThreads> threads_;
  proto::Plan plan_;
  std::unique_ptr<SequentialExecutor> executor_;
  std::mutex run_mutex_;  // held by Run: a second thread's Run fails
};

}  // namespace ofl
