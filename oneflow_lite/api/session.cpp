#include "oneflow_lite/api/session.h"

#include "graph/autodiff.h"
#include "graph/lowering.h"

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

Maybe<std::unique_ptr<Session>> Session::Create(const OpGraph& graph,
                                                const SessionOptions& options) {
  OFL_ENSURE(options.num_threads >= 0, "session: num_threads=", options.num_threads,
             " is negative");
  std::unique_ptr<Session> s(new Session());
  s->threads_ = std::make_unique<KernelThreads>(options.num_threads);
  OFL_ASSIGN_OR_RETURN(s->plan_, LowerSingleDevice(graph));
  OFL_ASSIGN_OR_RETURN(s->executor_, SequentialExecutor::Create(s->plan_));
  for (const std::string& v : graph.variable_names()) {
    OFL_ASSIGN_OR_RETURN(Tensor init, graph.InitialValue(v));
    OFL_RETURN_IF_ERROR(s->executor_->SetVariable(v, init));
  }
  return s;
}

Status Session::Run(const std::map<std::string, Tensor>& feeds,
                    const std::vector<std::string>& fetches, std::vector<Tensor>* results) {
  std::unique_lock<std::mutex> lock(run_mutex_, std::try_to_lock);
  OFL_ENSURE(lock.owns_lock(), "Session.run: already running on another thread (a Session runs "
             "one call at a time)");
  return executor_->Run(feeds, fetches, results);
}

}  // namespace ofl
