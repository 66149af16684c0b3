#include "oneflow_lite/api/session.h"

#include "graph/autodiff.h"

namespace ofl {

Status Program::Minimize(const std::string& loss, const OptimizerConf& optimizer) {
  OFL_ENSURE(!minimized_, "Minimize was already called on this program");
  // Work on a copy so that a failure leaves the program unchanged.
  OpGraph trial = graph_;
  OFL_RETURN_IF_ERROR(trial.SetLoss(loss));
  OFL_ASSIGN_OR_RETURN(auto grads, AppendBackwardOfLoss(&trial));
  OFL_ENSURE(!grads.empty(), "loss '", loss, "' does not depend on any trainable variable");
  OFL_RETURN_IF_ERROR(AppendOptimizer(&trial, optimizer, grads));
  graph_ = std::move(trial);
  gradients_ = std::move(grads);
  minimized_ = true;
  return Status::OK();
}

Maybe<Strategy> OneDeviceStrategy(const OpGraph& graph) {
  OFL_ASSIGN_OR_RETURN(Placement device, Placement::Create(DeviceType::kCPU, {0}));
  return ReplicatedStrategy(graph, device);
}

DistributedOptions OneDeviceOptions(const SessionOptions& options) {
  DistributedOptions d;
  d.num_threads = options.num_threads;
  d.timeout = options.timeout;
  d.trace_path = options.trace_path;
  d.num_slots = 1;
  d.micro_batches = 1;
  d.transactional = options.transactional;
  d.gradient_bucket_bytes = 0;
  d.plan_memory = options.plan_memory;
  d.record_acts = options.record_acts;
  d.fuse_matmul_bias = options.fuse_matmul_bias;
  return d;
}

Maybe<std::unique_ptr<Session>> Session::Create(const OpGraph& graph,
                                                const SessionOptions& options) {
  OFL_ENSURE(options.num_threads >= 0, "session: num_threads=", options.num_threads,
             " is negative");
  OFL_ENSURE(options.timeout.count() > 0, "session: timeout=", options.timeout.count(),
             " ms must be positive");
  OFL_ASSIGN_OR_RETURN(Strategy strategy, OneDeviceStrategy(graph));
  std::unique_ptr<Session> s(new Session());
  s->threads_ = std::make_unique<KernelThreads>(options.num_threads);
  DistributedOptions d = OneDeviceOptions(options);
  d.num_threads = s->threads_->num_threads();
  OFL_RETURN_IF_ERROR(s->Init(graph, strategy, {}, d));
  return s;
}

}  // namespace ofl
