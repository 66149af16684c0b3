// Runtime::Run: checks feeds and fetches, hands the actor threads one run,
// waits for them, and gathers fetched values, act records and the trace.
#include <cblas.h>

#include <algorithm>

#include "runtime/plan_check.h"
#include "runtime/runtime.h"
#include "runtime/runtime_impl.h"
#include "runtime/trace.h"

namespace ofl {

namespace {

// OpenBLAS's pool is process-wide: bounded to the smallest rank share while
// a multi-rank run is active, restored afterwards.
class BlasThreadsScope {
 public:
  // shares: per rank, 0 for the ranks of other processes.
  explicit BlasThreadsScope(const std::vector<int>& shares) {
    int local = 0, smallest = 0;
    for (int s : shares) {
      if (s <= 0) continue;
      smallest = local++ == 0 ? s : std::min(smallest, s);
    }
    if (local <= 1) return;
    previous_ = openblas_get_num_threads();
    openblas_set_num_threads(smallest);
  }
  ~BlasThreadsScope() {
    if (previous_ > 0) openblas_set_num_threads(previous_);
  }

 private:
  int previous_ = 0;
};

}  // namespace

Status Runtime::PrepareFeeds(int64_t num_iterations, const std::vector<TensorMap>& feeds) {
  Impl& m = *impl_;
  const int64_t n = static_cast<int64_t>(feeds.size());
  OFL_ENSURE(n == 1 || n == num_iterations || (n == 0 && m.sources.empty()), "run: ", n,
             " feed maps for ", num_iterations,
             " iterations (give one per iteration, or one "
             "for all)");
  for (int64_t i = 0; i < n; ++i) {
    for (const auto& [key, t] : feeds[i]) {
      OFL_ENSURE(m.sources.count(key) > 0, "run: '", key.name, "' on rank ", key.rank,
                 " is not an input of the plan");
    }
  }
  for (const auto& [key, task] : m.sources) {
    const Tensor& reg = m.registers[plan_.tasks(task).outputs(0)].slots[0];
    std::vector<const Tensor*> per_step;
    for (int64_t i = 0; i < n; ++i) {
      auto it = feeds[i].find(key);
      OFL_ENSURE(it != feeds[i].end(), "run: input '", key.name, "' on rank ", key.rank,
                 " was not fed", n > 1 ? StrCat(" for iteration ", i) : std::string());
      const Tensor& t = it->second;
      OFL_ENSURE(t.shape() == reg.shape() && t.dtype() == reg.dtype(), "run: input '", key.name,
                 "' on rank ", key.rank, " expects shape ", reg.shape(), " ",
                 DataTypeName(reg.dtype()), ", got ", t.shape(), " ", DataTypeName(t.dtype()));
      if (reg.device().is_host()) {
        OFL_RETURN_IF_ERROR(
            Tensor::CheckCopy(reg, t, StrCat("run: input '", key.name, "' on rank ", key.rank)));
      } else {  // the SOURCE copies it host -> device
        OFL_ENSURE(t.device().is_host(), "run: input '", key.name, "' on rank ", key.rank,
                   " is on ", t.device(), "; feeds are host tensors");
      }
      per_step.push_back(&t);
    }
    SetSourceFeeds(m.actor_of_task[task], std::move(per_step));
  }
  return Status::OK();
}

Status Runtime::PrepareFetches(const std::vector<std::string>& fetches, int64_t num_iterations) {
  Impl& m = *impl_;
  // Where each fetch comes from, per rank: a task, its input or output, the argument.
  struct Source {
    int64_t task = -1;
    bool from_input = false;
    int arg = 0;
  };
  std::vector<std::pair<TensorKey, Source>> wanted;
  for (const std::string& f : fetches) {
    std::map<int64_t, Source> found;
    for (const auto& t : plan_.tasks()) {
      if (t.kind() != proto::TaskProto::SINK) continue;
      if (t.op_conf().name() == f || plan_.registers(t.inputs(0)).name() == f) {
        found[t.rank()] = {t.id(), true, 0};
      }
    }
    bool persistent = false;
    if (found.empty()) {  // a register: on each rank, the last one of that name in plan order
      for (const auto& r : plan_.registers()) {
        if (r.name() != f || m.registers[r.id()].control || m.producer[r.id()] < 0) continue;
        if (r.persistent()) {
          persistent = true;
          continue;
        }
        const proto::TaskProto& t = plan_.tasks(m.producer[r.id()]);
        const auto& outs = t.outputs();
        const int arg =
            static_cast<int>(std::find(outs.begin(), outs.end(), r.id()) - outs.begin());
        Source& s = found[r.rank()];
        if (s.task <= t.id()) s = {t.id(), false, arg};
      }
    }
    OFL_ENSURE(!found.empty(), "run: cannot fetch ",
               persistent ? "variable '" + f + "' (read it with GetVariable)"
                          : "unknown tensor '" + f + "'");
    for (const auto& [rank, s] : found) {  // other processes fetch their ranks' own
      if (m.actor_of_task[s.task] != nullptr) wanted.push_back({TensorKey{f, rank}, s});
    }
  }
  m.fetch_keys.clear();
  m.fetch_buffers.assign(wanted.size(), std::vector<Tensor>(num_iterations));
  for (size_t k = 0; k < wanted.size(); ++k) {
    const auto& [key, s] = wanted[k];
    m.fetch_keys.push_back(key);
    Actor* actor = m.actor_of_task[s.task];
    DeviceContext* device = m.devices[actor->task().rank()].get();
    actor->AddFetch(s.from_input, s.arg, &m.fetch_buffers[k], device);
  }
  return Status::OK();
}

Maybe<RunResult> Runtime::Run(int64_t num_iterations, const std::vector<TensorMap>& feeds,
                              const std::vector<std::string>& fetches) {
  Impl& m = *impl_;
  OFL_ENSURE(num_iterations >= 0, "run: num_iterations is ", num_iterations);
  OFL_RETURN_IF_ERROR(RunIterationsFit(plan_, num_iterations));
  for (auto& actor : m.actors) actor->ClearFetches();
  OFL_RETURN_IF_ERROR(PrepareFeeds(num_iterations, feeds));
  OFL_RETURN_IF_ERROR(PrepareFetches(fetches, num_iterations));
  // The undo copies with buffers of their own (all of them for more than one
  // iteration); the arena's are saved by their writers' acts.
  OFL_RETURN_IF_ERROR(m.undo->BeginRun(num_iterations));

  RunContext run;
  run.num_iterations = num_iterations;
  run.first_iteration = iteration_;
  run.timeout = m.options.timeout;
  run.record_acts = m.options.record_acts || !m.options.trace_path.empty();
  run.detect_anomaly = m.options.detect_anomaly;
  for (auto& t : m.threads) run.threads.push_back(t.get());
  run.on_failure = &m.options.on_failure;
  run.SetRunning(static_cast<int64_t>(m.threads.size()));
  for (auto& actor : m.actors) actor->BeginRun(&run);
  for (auto& t : m.threads) t->ResetForRun();
  {
    BlasThreadsScope blas(shares_);
    run.start = std::chrono::steady_clock::now();
    for (auto& t : m.threads) t->BeginRun(&run);
    run.WaitAllFinished();
  }
  // Every stream's work is done, and its kernels' device-side user errors
  // (an id out of range on a GPU) are the run's error (the first in thread
  // order) unless an actor failed first. The actor threads are idle now.
  Status device_error = Status::OK();
  for (auto& t : m.threads) {
    Status s = m.devices[t->rank()]->Finish(t->device_stream());
    if (device_error.ok() && !s.ok()) {
      device_error = Status(s.code(), StrCat("rank ", t->rank(), ": ", s.message()));
    }
  }

  RunResult result;
  for (auto& t : m.threads) {
    std::vector<ActRecord> records = t->TakeRecords();
    result.acts.insert(result.acts.end(), records.begin(), records.end());
  }
  std::sort(result.acts.begin(), result.acts.end(),
            [](const ActRecord& a, const ActRecord& b) { return a.start_ns < b.start_ns; });
  result.act_counts.assign(plan_.tasks_size(), 0);  // other processes' tasks: 0
  for (auto& actor : m.actors) {
    result.act_counts[actor->task().id()] = actor->acts();
    actor->ClearFetches();
    if (actor->task().kind() == proto::TaskProto::SOURCE) SetSourceFeeds(actor.get(), {});
  }
  result.peak_bytes = peak_bytes();
  Status trace = Status::OK();
  if (!m.options.trace_path.empty()) {
    trace = WriteChromeTrace(m.options.trace_path, result.acts, m.task_names);
  }
  // Every actor thread has stopped: the outcome may restore the variables.
  const Status local = !run.error().ok() ? run.error() : !device_error.ok() ? device_error : trace;
  const Status outcome = ConcludeRun(local, m.options.commit, m.undo.get());
  if (outcome.ok() || !m.options.transactional) iteration_ += num_iterations;
  OFL_RETURN_IF_ERROR(outcome);
  result.fetched.resize(num_iterations);
  for (size_t k = 0; k < m.fetch_keys.size(); ++k) {
    for (int64_t i = 0; i < num_iterations; ++i) {
      // A task of period p fetches once per p iterations (the last of them).
      if (!m.fetch_buffers[k][i].defined()) continue;
      result.fetched[i][m.fetch_keys[k]] = std::move(m.fetch_buffers[k][i]);
    }
  }
  m.fetch_buffers.clear();
  return result;
}

Status Runtime::SetIteration(int64_t iteration) {
  OFL_ENSURE(iteration >= 0, "set_iteration: iteration ", iteration, " must be >= 0");
  iteration_ = iteration;
  return Status::OK();
}

}  // namespace ofl
