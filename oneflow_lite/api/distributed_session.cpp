#include "oneflow_lite/api/distributed_session.h"

#include "graph/strategy_dot.h"
#include "ops/array/strided_copy.h"
#include "ops/kernel.h"  // OFL_DISPATCH_FLOAT

namespace ofl {

namespace {

std::vector<int64_t> Dims(const proto::ShapeProto& s) {
  return std::vector<int64_t>(s.dims().begin(), s.dims().end());
}

}  // namespace

Maybe<std::unique_ptr<DistributedSession>> DistributedSession::Create(
    const OpGraph& graph, const Strategy& strategy, const std::vector<std::string>& fetches,
    const DistributedOptions& options) {
  OFL_ENSURE(options.num_slots >= 1, "DistributedSession: num_slots=", options.num_slots,
             " must be >= 1 (buffers per register)");
  OFL_ENSURE(options.micro_batches >= 1, "DistributedSession: micro_batches=",
             options.micro_batches, " must be >= 1");
  OFL_ENSURE(options.num_threads >= 0, "DistributedSession: num_threads=", options.num_threads,
             " must be >= 0 (0: every core)");
  OFL_ENSURE(options.timeout.count() > 0, "DistributedSession: timeout=", options.timeout.count(),
             " ms must be > 0");
  std::unique_ptr<DistributedSession> s(new DistributedSession());
  s->graph_ = graph;
  s->strategy_ = strategy;
  s->fetches_ = fetches;
  LoweringOptions lowering;
  lowering.num_slots = options.num_slots;
  lowering.micro_batches = options.micro_batches;
  s->micro_batches_ = options.micro_batches;
  OFL_ASSIGN_OR_RETURN(s->plan_, LowerDistributed(graph, strategy, fetches, lowering));
  OFL_ASSIGN_OR_RETURN(BoxingGroups groups, BoxingGroups::Create(s->plan_, options.timeout));
  s->groups_ = std::make_unique<BoxingGroups>(std::move(groups));
  RuntimeOptions ro;
  ro.timeout = options.timeout;
  ro.trace_path = options.trace_path;
  ro.num_threads = options.num_threads;
  ro.transactional = options.transactional;
  BoxingGroups* g = s->groups_.get();
  // A failed rank (a kernel rejecting a value) wakes the ranks blocked in a
  // collective now; RunStep resets the groups before the next run.
  ro.on_failure = [g](const Status& error) { g->AbortAll(error.message()); };
  ro.boxing = [g](const proto::TaskProto& task, const Tensor& input, Tensor* output) {
    return RunBoxingStep(task, input, output, g->For(task.boxing_conf().group_id(), task.rank()));
  };
  OFL_ASSIGN_OR_RETURN(s->runtime_, Runtime::Create(s->plan_, ro));
  for (const proto::TaskProto& t : s->plan_.tasks()) {
    if (t.kind() != proto::TaskProto::SOURCE && t.kind() != proto::TaskProto::VARIABLE) continue;
    s->source_registers_[t.op_conf().name()].push_back(&s->plan_.registers(t.outputs(0)));
  }
  for (const std::string& v : graph.variable_names()) {
    OFL_ASSIGN_OR_RETURN(Tensor init, graph.InitialValue(v));
    OFL_RETURN_IF_ERROR(s->SetVariable(v, init));
  }
  return s;
}

Maybe<std::map<int64_t, Tensor>> DistributedSession::Slice(const std::string& name,
                                                           const Tensor& logical) const {
  auto it = source_registers_.find(name);
  if (it == source_registers_.end()) return NotFound("unknown input or variable '", name, "'");
  std::map<int64_t, Tensor> parts;
  for (const proto::RegisterDesc* r : it->second) {
    OFL_ENSURE(Shape(Dims(r->logical_shape())) == logical.shape(), "'", name, "' expects shape ",
               Shape(Dims(r->logical_shape())), ", got ", logical.shape());
    OFL_ASSIGN_OR_RETURN(DataType dtype, ParseDataType(r->desc().dtype()));
    OFL_ENSURE(dtype == logical.dtype(), "'", name, "' expects dtype ", DataTypeName(dtype),
               ", got ", DataTypeName(logical.dtype()));
    Shape local(Dims(r->desc().shape()));
    Tensor part(local, dtype);
    std::vector<int64_t> offset(r->logical_offset().begin(), r->logical_offset().end());
    CopyBox(logical, offset, &part, std::vector<int64_t>(local.ndim(), 0), local);
    parts[r->rank()] = part;
  }
  return parts;
}

Maybe<Tensor> DistributedSession::Assemble(const std::string& name,
                                           const std::map<int64_t, Tensor>& parts) const {
  OFL_ASSIGN_OR_RETURN(TensorDesc desc, graph_.Desc(name));
  OFL_ASSIGN_OR_RETURN(NdSbp sbp, strategy_.ProducedSbp(graph_, name));
  OFL_ASSIGN_OR_RETURN(Placement p, strategy_.ProducedPlacement(graph_, name));
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
  OFL_ENSURE(lock.owns_lock(), "DistributedSession.run: already running on another thread (a "
             "session runs one call at a time)");
  for (const std::string& f : fetches) {
    OFL_ENSURE(std::find(fetches_.begin(), fetches_.end(), f) != fetches_.end(), "run: '", f,
               "' was not named as a fetch when the session was created");
  }
  OFL_ENSURE(static_cast<int64_t>(feeds.size()) == micro_batches_, "run: ", feeds.size(),
             " feed maps for ", micro_batches_, " micro-batches (one per micro-batch)");
  std::vector<TensorMap> per_rank(feeds.size());
  for (size_t m = 0; m < feeds.size(); ++m) {
    for (const std::string& in : graph_.input_names()) {
      OFL_ENSURE(feeds[m].count(in) > 0, "run: input '", in, "' was not fed",
                 micro_batches_ > 1 ? StrCat(" for micro-batch ", m) : std::string());
    }
    for (const auto& [name, logical] : feeds[m]) {
      OFL_ENSURE(graph_.IsInput(name), "run: '", name, "' is not an input of the graph");
      OFL_ASSIGN_OR_RETURN(auto parts, Slice(name, logical));
      for (auto& [rank, t] : parts) per_rank[m][{name, rank}] = t;
    }
  }
  groups_->ResetAll();  // no rank is inside a collective between runs
  OFL_ASSIGN_OR_RETURN(RunResult r, runtime_->Run(micro_batches_, per_rank, fetches));
  results->assign(micro_batches_, {});
  for (int64_t m = 0; m < micro_batches_; ++m) {
    for (const std::string& f : fetches) {
      std::map<int64_t, Tensor> parts;
      for (const auto& [key, t] : r.fetched[m]) {
        if (key.name == f) parts[key.rank] = t;
      }
      if (parts.empty()) {  // made once per step: only the last micro-batch has it
        (*results)[m].emplace_back();
        continue;
      }
      OFL_ASSIGN_OR_RETURN(Tensor t, Assemble(f, parts));
      (*results)[m].push_back(t);
    }
  }
  return Status::OK();
}

Maybe<Tensor> DistributedSession::GetVariable(const std::string& name) const {
  OFL_ENSURE(graph_.IsVariable(name), "unknown variable '", name, "'");
  std::map<int64_t, Tensor> parts;
  for (const proto::RegisterDesc* r : source_registers_.at(name)) {
    OFL_ASSIGN_OR_RETURN(parts[r->rank()], runtime_->GetVariable(name, r->rank()));
  }
  return Assemble(name, parts);
}

Status DistributedSession::SetVariable(const std::string& name, const Tensor& value) {
  OFL_ENSURE(graph_.IsVariable(name), "unknown variable '", name, "'");
  OFL_ASSIGN_OR_RETURN(auto parts, Slice(name, value));
  for (const auto& [rank, t] : parts) OFL_RETURN_IF_ERROR(runtime_->SetVariable(name, rank, t));
  return Status::OK();
}

std::string DistributedSession::StrategyDot() const { return StrategyToDot(graph_, strategy_); }

}  // namespace ofl
