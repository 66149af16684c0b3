#include "oneflow_lite/api/distributed_session.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <set>
#include <thread>

#include "graph/strategy_dot.h"
#include "oneflow_lite/api/world_exchange.h"
#include "oneflow_lite/core/slicing.h"
#include "ops/array/strided_copy.h"
#include "ops/kernel.h"  // OFL_DISPATCH_FLOAT
#include "runtime/plan_check.h"

namespace ofl {

namespace {

std::vector<int64_t> Dims(const proto::ShapeProto& s) {
  return std::vector<int64_t>(s.dims().begin(), s.dims().end());
}

}  // namespace

Maybe<std::shared_ptr<ProcessWorld>> WorldFromEnvironment() { return ProcessWorld::FromEnv(); }

LoweringOptions SessionLowering(const DistributedOptions& options) {
  LoweringOptions lowering;
  lowering.num_slots = options.num_slots;
  lowering.micro_batches = options.micro_batches;
  lowering.gradient_bucket_bytes = options.gradient_bucket_bytes;
  lowering.fuse_matmul_bias = options.fuse_matmul_bias;
  return lowering;
}

Maybe<std::unique_ptr<DistributedSession>> DistributedSession::Create(
    const OpGraph& graph, const Strategy& strategy, const std::vector<std::string>& fetches,
    const DistributedOptions& options) {
  std::unique_ptr<DistributedSession> s(new DistributedSession());
  OFL_RETURN_IF_ERROR(s->Init(graph, strategy, fetches, options));
  return s;
}

DistributedSession::~DistributedSession() = default;

Status DistributedSession::Init(const OpGraph& graph, const Strategy& strategy,
                                const std::vector<std::string>& fetches,
                                const DistributedOptions& options) {
  OFL_ENSURE(options.num_slots >= 1, "DistributedSession: num_slots=", options.num_slots,
             " must be >= 1 (buffers per register)");
  OFL_ENSURE(options.micro_batches >= 1,
             "DistributedSession: micro_batches=", options.micro_batches, " must be >= 1");
  OFL_ENSURE(options.num_threads >= 0, "DistributedSession: num_threads=", options.num_threads,
             " must be >= 0 (0: every core)");
  OFL_ENSURE(options.timeout.count() > 0, "DistributedSession: timeout=", options.timeout.count(),
             " ms must be > 0");
  OFL_ENSURE(options.gradient_bucket_bytes >= 0,
             "DistributedSession: gradient_bucket_bytes=", options.gradient_bucket_bytes,
             " must be >= 0 (0: no buckets)");
  graph_ = graph;
  strategy_ = strategy;
  fetches_ = fetches;
  micro_batches_ = options.micro_batches;
  OFL_ASSIGN_OR_RETURN(plan_, LowerDistributed(graph, strategy, fetches, SessionLowering(options)));
  OFL_RETURN_IF_ERROR(JoinWorld(options));
  OFL_RETURN_IF_ERROR(StartRuntime(options));
  for (const proto::TaskProto& t : plan_.tasks()) {
    if (t.kind() != proto::TaskProto::SOURCE && t.kind() != proto::TaskProto::VARIABLE) continue;
    source_registers_[t.op_conf().name()].push_back(&plan_.registers(t.outputs(0)));
  }
  return SetInitialVariables();
}

Status DistributedSession::JoinWorld(const DistributedOptions& options) {
  world_ = options.world;
  local_feeds_ = options.local_feeds && world_ != nullptr && world_->distributed();
  if (world_ == nullptr || !world_->distributed()) return Status::OK();
  const int64_t k = world_->devices_per_process();
  const int64_t devices = world_->num_processes() * k;
  OFL_ENSURE(plan_.num_ranks() <= devices, "DistributedSession: the placement uses rank ",
             plan_.num_ranks() - 1, " but the world has ", devices, " devices (",
             world_->num_processes(), " processes x ", k, " devices per process)");
  for (int64_t r = 0; r < plan_.num_ranks(); ++r) plan_.add_process_of_rank(r / k);
  name_ = StrCat("s", world_->NextSequence("session"));
  return CheckSamePlan(world_.get(), name_ + "/plan", plan_);
}

Status DistributedSession::StartRuntime(const DistributedOptions& options) {
  ProcessWorld* world = world_.get();
  const bool distributed = world != nullptr && world->distributed();
  const int64_t process = distributed ? world->process() : 0;
  OFL_ASSIGN_OR_RETURN(
      groups_, BoxingGroups::Create(plan_, options.timeout, BoxingWorld{world, process, name_}));
  RuntimeOptions ro;
  ro.timeout = options.timeout;
  ro.trace_path = options.trace_path;
  ro.num_threads = options.num_threads;
  ro.process = process;
  ro.transactional = options.transactional;
  ro.plan_memory = options.plan_memory;
  ro.record_acts = options.record_acts;
  BoxingGroups* g = groups_.get();
  // A failed rank (a kernel rejecting a value) wakes the ranks blocked in a
  // collective now, here and (through the store) in the other processes;
  // RunStep resets the groups before the next run.
  ro.on_failure = [g, this](const Status& error) {
    g->AbortAll(error.message());
    if (world_ != nullptr) {
      std::lock_guard<std::mutex> lock(scope_mu_);
      world_->Fail(scope_, StrCat("process ", world_->process(), ": ", error.message()));
    }
  };
  if (distributed) {
    // The commit point: the runtime keeps this run's updates only when every
    // process's run succeeded, else restores them (transactional steps).
    ro.commit = [this](const Status& local) { return Vote(local); };
  }
  ro.boxing = [g](const proto::TaskProto& task, const Tensor& input, Tensor* output,
                  const BoxingStream& on) {
    return RunBoxingStep(task, input, output, g->For(task.boxing_conf().group_id(), task.rank()),
                         on);
  };
  OFL_ASSIGN_OR_RETURN(runtime_, Runtime::Create(plan_, ro));
  return Status::OK();
}

Status DistributedSession::SetInitialVariables() {
  std::vector<std::pair<std::string, Tensor>> initial;
  for (const std::string& v : graph_.variable_names()) {
    OFL_ASSIGN_OR_RETURN(Tensor init, graph_.InitialValue(v));
    OFL_RETURN_IF_ERROR(SetVariable(v, init));
    initial.emplace_back(v, init);
  }
  if (world_ != nullptr && world_->distributed()) {
    OFL_RETURN_IF_ERROR(CheckSameValues(world_.get(), name_ + "/initial", initial));
  }
  return Status::OK();
}

Maybe<std::map<int64_t, Tensor>> DistributedSession::Slice(const std::string& name,
                                                           const Tensor& given,
                                                           bool local_rows) const {
  auto it = source_registers_.find(name);
  if (it == source_registers_.end()) return NotFound("unknown input or variable '", name, "'");
  std::map<int64_t, Tensor> parts;
  for (const proto::RegisterDesc* r : it->second) {
    if (!IsLocal(r->rank())) continue;  // another process slices its own
    const Shape logical(Dims(r->logical_shape()));
    std::vector<int64_t> offset(r->logical_offset().begin(), r->logical_offset().end());
    Shape expected = logical;
    if (local_rows) {  // `given` holds this process's balanced part of axis 0
      OFL_ENSURE(logical.ndim() >= 1, "input '", name,
                 "' is a scalar: it cannot be fed in "
                 "parts (local_feeds)");
      const Range rows = BalancedPart(logical[0], world_->num_processes(), world_->process());
      std::vector<int64_t> dims = logical.dims();
      dims[0] = rows.size;
      expected = Shape(dims);
      const int64_t first = offset[0], count = r->desc().shape().dims(0);
      OFL_ENSURE(count == 0 || (first >= rows.begin && first + count <= rows.begin + rows.size),
                 "input '", name, "': the layout puts rows [", first, ", ", first + count,
                 ") on rank ", r->rank(), " of process ", world_->process(),
                 ", outside the rows it feeds [", rows.begin, ", ", rows.begin + rows.size,
                 ") (local_feeds needs the batch split over the processes in order: feed the "
                 "global batch instead)");
      offset[0] -= rows.begin;
    }
    OFL_ENSURE(expected == given.shape(), "'", name, "' expects shape ", expected, ", got ",
               given.shape(), local_rows ? " (this process's rows of the global batch)" : "");
    OFL_ASSIGN_OR_RETURN(DataType dtype, ParseDataType(r->desc().dtype()));
    OFL_ENSURE(dtype == given.dtype(), "'", name, "' expects dtype ", DataTypeName(dtype), ", got ",
               DataTypeName(given.dtype()));
    Shape local(Dims(r->desc().shape()));
    if (local == given.shape()) {  // the whole tensor (B, or one rank): no copy
      parts[r->rank()] = given;
      continue;
    }
    Tensor part(local, dtype);
    CopyBox(given, offset, &part, std::vector<int64_t>(local.ndim(), 0), local);
    parts[r->rank()] = part;
  }
  return parts;
}

Maybe<Tensor> DistributedSession::Assemble(const std::string& name,
                                           const std::map<int64_t, Tensor>& parts) const {
  OFL_ASSIGN_OR_RETURN(TensorDesc desc, graph_.Desc(name));
  OFL_ASSIGN_OR_RETURN(NdSbp sbp, strategy_.ProducedSbp(graph_, name));
  OFL_ASSIGN_OR_RETURN(Placement p, strategy_.ProducedPlacement(graph_, name));
  bool partial = false;
  for (const Sbp& axis : sbp.axes()) partial |= axis.is_partial_sum();
  if (parts.size() == 1 && parts.begin()->second.shape() == desc.shape && !partial) {
    return parts.begin()->second;  // the whole tensor from one rank (one device, or B)
  }
  Tensor out = Tensor::Zeros(desc.shape, desc.dtype);
  Tensor part_sum = Tensor::Zeros(desc.shape, desc.dtype);
  for (int64_t i = 0; i < p.size(); ++i) {
    std::vector<int64_t> coords = p.Coordinates(i);
    bool duplicate = false;  // a B axis repeats the same value: take coordinate 0
    for (int64_t a = 0; a < sbp.size(); ++a) duplicate |= sbp[a].is_broadcast() && coords[a] != 0;
    if (duplicate) continue;
    auto it = parts.find(p.ranks()[i]);
    CHECK(it != parts.end()) << "no part of '" << name << "' from rank " << p.ranks()[i];
    TensorSlice slice = SliceOf(desc.shape, p.hierarchy(), sbp, coords);
    if (!slice.partial) {
      CopyBox(it->second, std::vector<int64_t>(desc.shape.ndim(), 0), &out, slice.offset,
              slice.shape);
      continue;
    }
    // P addends: place the slice into a zero tensor and add it up.
    part_sum.Fill(0.0);
    CopyBox(it->second, std::vector<int64_t>(desc.shape.ndim(), 0), &part_sum, slice.offset,
            slice.shape);
    OFL_DISPATCH_FLOAT(desc.dtype, T, {
      T* o = out.data<T>();
      const T* s = part_sum.data<T>();
      for (int64_t k = 0; k < out.numel(); ++k) o[k] += s[k];
    });
  }
  return out;
}

Status DistributedSession::Run(const std::map<std::string, Tensor>& feeds,
                               const std::vector<std::string>& fetches,
                               std::vector<Tensor>* results) {
  OFL_ENSURE(micro_batches_ == 1, "run: the session takes ", micro_batches_,
             " micro-batches per step (use RunStep)");
  std::vector<std::vector<Tensor>> per_micro_batch;
  OFL_RETURN_IF_ERROR(RunStep({feeds}, fetches, &per_micro_batch));
  *results = std::move(per_micro_batch[0]);
  return Status::OK();
}

Status DistributedSession::RunStep(const std::vector<std::map<std::string, Tensor>>& feeds,
                                   const std::vector<std::string>& fetches,
                                   std::vector<std::vector<Tensor>>* results) {
  std::unique_lock<std::mutex> lock(run_mutex_, std::try_to_lock);
  OFL_ENSURE(lock.owns_lock(),
             "Session.run: already running on another thread (a Session runs "
             "one call at a time)");
  OFL_ENSURE(static_cast<int64_t>(feeds.size()) == micro_batches_, "run: ", feeds.size(),
             " feed maps for ", micro_batches_, " micro-batches (one per micro-batch)");
  OFL_ASSIGN_OR_RETURN(std::vector<TensorMap> per_rank, SliceFeeds(feeds));
  // What the runtime fetches: each tensor once, variables read after the step apart.
  std::vector<std::string> made;
  for (const std::string& f : fetches) {
    OFL_ENSURE(graph_.HasTensor(f), "run: cannot fetch unknown tensor '", f, "'");
    if (!ReadAfterStep(f) && std::find(made.begin(), made.end(), f) == made.end()) {
      made.push_back(f);
    }
  }
  OFL_ASSIGN_OR_RETURN(RunResult r, RunAndVote(per_rank, made));
  last_acts_ = std::move(r.acts);
  if (world_ != nullptr && world_->distributed()) {  // every process gets every part
    for (int64_t m = 0; m < micro_batches_; ++m) {
      OFL_ASSIGN_OR_RETURN(r.fetched[m], GatherTensors(world_.get(), StrCat(scope_, "/fetch", m),
                                                       r.fetched[m], scope_));
    }
  }
  return AssembleFetches(fetches, &r, results);
}

Maybe<std::vector<TensorMap>> DistributedSession::SliceFeeds(
    const std::vector<std::map<std::string, Tensor>>& feeds) const {
  std::vector<TensorMap> per_rank(feeds.size());
  for (size_t m = 0; m < feeds.size(); ++m) {
    for (const std::string& in : graph_.input_names()) {
      OFL_ENSURE(feeds[m].count(in) > 0, "run: input '", in, "' was not fed",
                 micro_batches_ > 1 ? StrCat(" for micro-batch ", m) : std::string());
    }
    for (const auto& [name, logical] : feeds[m]) {
      OFL_ENSURE(graph_.IsInput(name), "run: '", name, "' is not an input of the graph");
      if (!local_feeds_) {  // the logical value (local_feeds: Slice checks the process's rows)
        const TensorDesc d = graph_.Desc(name).value();
        OFL_ENSURE(logical.shape() == d.shape && logical.dtype() == d.dtype, "run: input '", name,
                   "' expects shape ", d.shape, " ", DataTypeName(d.dtype), ", got ",
                   logical.shape(), " ", DataTypeName(logical.dtype()));
      }
      OFL_ASSIGN_OR_RETURN(auto parts, Slice(name, logical, local_feeds_));
      for (auto& [rank, t] : parts) per_rank[m][{name, rank}] = std::move(t);
    }
  }
  return per_rank;
}

bool DistributedSession::ReadAfterStep(const std::string& fetch) const {
  return graph_.IsVariable(fetch) &&
         std::find(fetches_.begin(), fetches_.end(), fetch) == fetches_.end();
}

Status DistributedSession::AssembleFetches(const std::vector<std::string>& fetches, RunResult* run,
                                           std::vector<std::vector<Tensor>>* results) {
  results->assign(micro_batches_, {});
  for (int64_t m = 0; m < micro_batches_; ++m) {
    std::set<std::string> taken;  // each result owns its buffer, also for a fetch named twice
    for (const std::string& f : fetches) {
      std::map<int64_t, Tensor> parts;
      if (ReadAfterStep(f)) {
        if (m + 1 < micro_batches_) {  // the value after the step: in the last micro-batch
          (*results)[m].emplace_back();
          continue;
        }
        OFL_ASSIGN_OR_RETURN(Tensor v, GetVariable(f));
        (*results)[m].push_back(std::move(v));
        continue;
      }
      for (const auto& [key, t] : run->fetched[m]) {
        if (key.name == f) parts[key.rank] = t;
      }
      if (parts.empty()) {  // made once per step: only the last micro-batch has it
        (*results)[m].emplace_back();
        continue;
      }
      OFL_ASSIGN_OR_RETURN(Tensor t, Assemble(f, parts));
      (*results)[m].push_back(taken.insert(f).second ? std::move(t) : t.Clone());
    }
  }
  return Status::OK();
}

Maybe<Tensor> DistributedSession::GetVariable(const std::string& name) const {
  if (!graph_.IsVariable(name)) return NotFound("unknown variable '", name, "'");
  TensorMap mine;
  for (const proto::RegisterDesc* r : source_registers_.at(name)) {
    if (!IsLocal(r->rank())) continue;
    OFL_ASSIGN_OR_RETURN(mine[TensorKey({name, r->rank()})],
                         runtime_->GetVariable(name, r->rank()));
  }
  TensorMap all = mine;
  if (world_ != nullptr && world_->distributed()) {
    OFL_ASSIGN_OR_RETURN(all,
                         GatherTensors(world_.get(), world_->NextScope(name_) + "/read", mine));
  }
  std::map<int64_t, Tensor> parts;
  for (auto& [key, t] : all) parts[key.rank] = std::move(t);
  return Assemble(name, parts);
}

Status DistributedSession::SetVariable(const std::string& name, const Tensor& value) {
  OFL_ENSURE(graph_.IsVariable(name), "unknown variable '", name, "'");
  const TensorDesc d = graph_.Desc(name).value();
  OFL_ENSURE(value.shape() == d.shape && value.dtype() == d.dtype, "variable '", name,
             "' has shape ", d.shape, " ", DataTypeName(d.dtype), ", got ", value.shape(), " ",
             DataTypeName(value.dtype()));
  OFL_ASSIGN_OR_RETURN(auto parts, Slice(name, value, false));
  for (const auto& [rank, t] : parts) OFL_RETURN_IF_ERROR(runtime_->SetVariable(name, rank, t));
  return Status::OK();
}

bool DistributedSession::IsLocal(int64_t rank) const {
  return ProcessOfRank(plan_, rank) == (world_ != nullptr ? world_->process() : 0);
}

Maybe<RunResult> DistributedSession::RunAndVote(const std::vector<TensorMap>& feeds,
                                                const std::vector<std::string>& fetches) {
  OFL_RETURN_IF_ERROR(groups_->ResetAll());  // no rank is inside a collective between runs
  const bool distributed = world_ != nullptr && world_->distributed();
  {
    std::lock_guard<std::mutex> lock(scope_mu_);
    scope_ = distributed ? world_->NextScope(name_) : "";
  }
  if (!distributed) return runtime_->Run(micro_batches_, feeds, fetches);
  // While the run goes on, a failure elsewhere (a lost process, another
  // process's failed rank) aborts this process's communicators, so that its
  // ranks stop now rather than at a collective's timeout.
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  std::thread watch([&] {
    std::unique_lock<std::mutex> lock(mu);
    while (!cv.wait_for(lock, std::chrono::milliseconds(50), [&] { return done; })) {
      const std::string failure = world_->CheckFailure(scope_);
      if (!failure.empty()) {
        groups_->AbortAll(failure);
        return;
      }
    }
  });
  Maybe<RunResult> run = runtime_->Run(micro_batches_, feeds, fetches);
  {
    std::lock_guard<std::mutex> lock(mu);
    done = true;
  }
  cv.notify_all();
  watch.join();
  return run;
}

Status DistributedSession::Vote(const Status& local) {
  const std::string outcome =
      local.ok() ? "" : StrCat("process ", world_->process(), ": ", local.message());
  auto votes = world_->AllGather(scope_ + "/vote",
                                 std::vector<char>(outcome.begin(), outcome.end()), scope_);
  if (!local.ok() && local.code() == StatusCode::kTimeout && !votes.ok()) {
    // A step that timed out here, perhaps because a peer hangs: the others
    // vote soon after (their steps time out too); name those that do not.
    const std::string late = world_->Late(scope_ + "/vote", std::chrono::milliseconds(5000));
    if (!late.empty()) {
      return Status(local.code(), StrCat(local.message(), "; process(es) ", late,
                                         " did not vote within 5000 ms (hung or stopped?)"));
    }
  }
  if (!local.ok()) return local;
  if (!votes.ok()) return votes.status();
  for (const auto& v : votes.value()) {
    if (v.empty()) continue;
    groups_->AbortAll("another process failed");
    return Status(StatusCode::kInternal,
                  StrCat("process ", world_->process(),
                         ": the step failed elsewhere: ", std::string(v.begin(), v.end())));
  }
  return Status::OK();
}

Maybe<VariableLayout> DistributedSession::VariableLayoutOf(const std::string& name) const {
  OFL_ENSURE(graph_.IsVariable(name), "unknown variable '", name, "'");
  OFL_ASSIGN_OR_RETURN(TensorDesc desc, graph_.Desc(name));
  VariableLayout layout;
  layout.shape = desc.shape;
  layout.dtype = desc.dtype;
  layout.nd_sbp = strategy_.sources().at(name);
  layout.placement = strategy_.SourcePlacement(name);
  for (int64_t i = 0; i < layout.placement.size(); ++i) {
    std::vector<int64_t> coords = layout.placement.Coordinates(i);
    bool primary = true;
    for (int64_t a = 0; a < layout.nd_sbp.size(); ++a) {
      primary &= !(layout.nd_sbp[a].is_broadcast() && coords[a] != 0);
    }
    layout.slices.push_back(
        SliceOf(desc.shape, layout.placement.hierarchy(), layout.nd_sbp, coords));
    layout.primary.push_back(primary);
  }
  return layout;
}

Maybe<const proto::RegisterDesc*> DistributedSession::VariableRegister(const std::string& name,
                                                                       int64_t rank) const {
  OFL_ENSURE(graph_.IsVariable(name), "unknown variable '", name, "'");
  const std::vector<int64_t>& local = LocalRanks();
  if (std::find(local.begin(), local.end(), rank) != local.end()) {
    for (const proto::RegisterDesc* r : source_registers_.at(name)) {
      if (r->rank() == rank) return r;
    }
  }
  std::string held;
  for (const proto::RegisterDesc* r : source_registers_.at(name)) {
    if (std::find(local.begin(), local.end(), r->rank()) == local.end()) continue;
    held += StrCat(held.empty() ? "" : ", ", r->rank());
  }
  return NotFound("variable '", name, "' has no slice on rank ", rank,
                  " in this process (its slices here: ranks [", held, "])");
}

Maybe<Tensor> DistributedSession::GetVariableSlice(const std::string& name, int64_t rank) const {
  OFL_RETURN_IF_ERROR(VariableRegister(name, rank).status());
  return runtime_->GetVariable(name, rank);
}

Status DistributedSession::SetVariableSlice(const std::string& name, int64_t rank,
                                            const Tensor& value) {
  OFL_ASSIGN_OR_RETURN(const proto::RegisterDesc* r, VariableRegister(name, rank));
  OFL_ASSIGN_OR_RETURN(DataType dtype, ParseDataType(r->desc().dtype()));
  const Shape shape(Dims(r->desc().shape()));
  OFL_ENSURE(value.shape() == shape && value.dtype() == dtype, "set_variable_slice: variable '",
             name, "' on rank ", rank, " expects ", DataTypeName(dtype), " ", shape, ", got ",
             DataTypeName(value.dtype()), " ", value.shape());
  return runtime_->SetVariable(name, rank, value);
}

Status DistributedSession::SetIteration(int64_t iteration) {
  std::unique_lock<std::mutex> lock(run_mutex_, std::try_to_lock);
  OFL_ENSURE(lock.owns_lock(), "set_iteration: a run is in progress on another thread");
  return runtime_->SetIteration(iteration);
}

std::string DistributedSession::StrategyDot() const { return StrategyToDot(graph_, strategy_); }

}  // namespace ofl
