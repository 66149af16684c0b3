#include "oneflow_lite/api/session.h"

#include <algorithm>

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
  OFL_ENSURE(options.timeout.count() > 0, "session: timeout=", options.timeout.count(),
             " ms must be positive");
  std::unique_ptr<Session> s(new Session());
  s->threads_ = std::make_unique<KernelThreads>(options.num_threads);
  OFL_ASSIGN_OR_RETURN(s->plan_, LowerSingleDevice(graph, {options.fuse_matmul_bias}));
  RuntimeOptions ro;
  ro.num_threads = s->threads_->num_threads();
  ro.timeout = options.timeout;
  ro.transactional = options.transactional;
  ro.trace_path = options.trace_path;
  ro.plan_memory = options.plan_memory;
  ro.record_acts = options.record_acts;
  OFL_ASSIGN_OR_RETURN(s->runtime_, Runtime::Create(s->plan_, std::move(ro)));
  for (const std::string& in : graph.input_names()) {
    OFL_ASSIGN_OR_RETURN(s->inputs_[in], graph.Desc(in));
  }
  std::set<int64_t> control;
  for (const auto& t : s->plan_.tasks()) {
    control.insert(t.ctrl_outputs().begin(), t.ctrl_outputs().end());
  }
  for (const auto& r : s->plan_.registers()) {
    if (!r.persistent() && control.count(r.id()) == 0) s->fetchable_.insert(r.name());
  }
  for (const std::string& v : graph.variable_names()) {
    OFL_ASSIGN_OR_RETURN(s->variables_[v], graph.Desc(v));
    OFL_ASSIGN_OR_RETURN(Tensor init, graph.InitialValue(v));
    OFL_RETURN_IF_ERROR(s->runtime_->SetVariable(v, 0, init));
  }
  return s;
}

Status Session::CheckFeeds(const std::map<std::string, Tensor>& feeds) const {
  for (const auto& [name, desc] : inputs_) {
    OFL_ENSURE(feeds.count(name) > 0, "run: input '", name, "' was not fed");
  }
  for (const auto& [name, t] : feeds) {
    auto it = inputs_.find(name);
    OFL_ENSURE(it != inputs_.end(), "run: '", name, "' is not an input of the graph");
    const TensorDesc& d = it->second;
    OFL_ENSURE(t.shape() == d.shape && t.dtype() == d.dtype, "run: input '", name,
               "' expects shape ", d.shape, " ", DataTypeName(d.dtype), ", got ", t.shape(), " ",
               DataTypeName(t.dtype()));
  }
  return Status::OK();
}

Status Session::Run(const std::map<std::string, Tensor>& feeds,
                    const std::vector<std::string>& fetches, std::vector<Tensor>* results) {
  std::unique_lock<std::mutex> lock(run_mutex_, std::try_to_lock);
  OFL_ENSURE(lock.owns_lock(), "Session.run: already running on another thread (a Session runs "
             "one call at a time)");
  OFL_RETURN_IF_ERROR(CheckFeeds(feeds));
  // Variables are read after the step (the runtime fetches only what a task
  // makes); every other tensor is fetched from the task that made it.
  std::vector<std::string> made;
  for (const std::string& f : fetches) {
    if (variables_.count(f) > 0) continue;
    OFL_ENSURE(fetchable_.count(f) > 0, "run: cannot fetch unknown tensor '", f, "'");
    if (std::find(made.begin(), made.end(), f) == made.end()) made.push_back(f);
  }
  TensorMap fed;
  for (const auto& [name, t] : feeds) fed.emplace(TensorKey{name, 0}, t);
  std::vector<TensorMap> per_iteration;
  if (!fed.empty()) per_iteration.push_back(std::move(fed));
  OFL_ASSIGN_OR_RETURN(RunResult r, runtime_->Run(1, per_iteration, made));
  last_acts_ = std::move(r.acts);
  results->clear();
  std::set<std::string> taken;
  for (const std::string& f : fetches) {
    if (variables_.count(f) > 0) {
      OFL_ASSIGN_OR_RETURN(Tensor v, runtime_->GetVariable(f, 0));
      results->push_back(std::move(v));
    } else {  // each result owns its buffer, also for a fetch named twice
      const Tensor& t = r.fetched[0].at({f, 0});
      results->push_back(taken.insert(f).second ? t : t.Clone());
    }
  }
  return Status::OK();
}

Maybe<Tensor> Session::GetVariable(const std::string& name) const {
  if (variables_.count(name) == 0) return NotFound("unknown variable '", name, "'");
  return runtime_->GetVariable(name, 0);
}

Status Session::SetVariable(const std::string& name, const Tensor& value) {
  auto it = variables_.find(name);
  OFL_ENSURE(it != variables_.end(), "unknown variable '", name, "'");
  const TensorDesc& d = it->second;
  OFL_ENSURE(value.shape() == d.shape && value.dtype() == d.dtype, "variable '", name,
             "' has shape ", d.shape, " ", DataTypeName(d.dtype), ", got ", value.shape(), " ",
             DataTypeName(value.dtype()));
  return runtime_->SetVariable(name, 0, value);
}

}  // namespace ofl
