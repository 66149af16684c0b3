// COMPUTE, SOURCE, VARIABLE, SINK, BOXING and ACC actors (runtime/actor_kinds.h).
#include "runtime/actor_kinds.h"

#include <cctype>

#include "ops/kernel.h"
#include "ops/op_registry.h"
#include "runtime/actor_thread.h"
#include "runtime/boxing.h"
#include "runtime/run_context.h"

namespace ofl {

namespace {

Shape ShapeOf(const proto::ShapeProto& proto) {
  return Shape(std::vector<int64_t>(proto.dims().begin(), proto.dims().end()));
}

class ComputeActor : public Actor {
 public:
  ComputeActor(const proto::TaskProto& task, const RankEnv& env)
      : Actor(task, TaskDisplayName(task)),
        arena_(env.arena),
        slots_(env.slots),
        device_(env.device) {}

  Status Prepare() override {
    const proto::OpConf& conf = task_.op_conf();
    ctx_.device = device_->device();
    ctx_.stream = thread()->device_stream();
    OFL_ASSIGN_OR_RETURN(kernel_, KernelRegistry::Find(conf.op_type(), ctx_.device.type));
    if (ctx_.device.is_host() && !ctx_.stream->is_inline()) {
      return Named(StatusCode::kInvalidArgument,
                   StrCat("a CPU kernel runs on its calling thread and needs an inline stream; ",
                          ctx_.device, "'s stream is not"));
    }
    Maybe<const OpDef*> def = OpRegistry::Find(conf.op_type());
    if (def.ok()) {
      for (const auto& [k, v] : def.value()->attr_defaults()) attrs_.Set(k, v);
      const int want_in = static_cast<int>(def.value()->input_names().size());
      const int want_out = static_cast<int>(def.value()->output_names().size());
      const int need_in = def.value()->num_required_inputs();
      const bool in_ok = def.value()->variadic_input()
                             ? num_data_inputs() >= 1
                             : num_data_inputs() >= need_in && num_data_inputs() <= want_in;
      if (!in_ok || num_data_outputs() != want_out) {
        return Named(StatusCode::kInvalidArgument,
                     StrCat("has ", num_data_inputs(), " data inputs and ", num_data_outputs(),
                            " data outputs, the op takes ", want_in, " and ", want_out));
      }
    }
    for (const auto& [k, v] : conf.attrs()) attrs_.Set(k, AttrFromProto(v));
    ctx_.op_type = conf.op_type();
    ctx_.op_name = conf.name();
    ctx_.attrs = &attrs_;
    ctx_.inputs.assign(num_data_inputs(), nullptr);
    ctx_.outputs.assign(num_data_outputs(), nullptr);
    output_buffers_.assign(num_data_outputs(), nullptr);
    if (num_data_outputs() > 0) {  // output 0's logical shape and offset, if the plan has them
      const proto::RegisterDesc& out = *data_output_register(0)->desc;
      ctx_.logical_shape =
          ShapeOf(out.has_logical_shape() ? out.logical_shape() : out.desc().shape());
      ctx_.logical_offset.assign(out.logical_offset().begin(), out.logical_offset().end());
      if (!out.has_logical_shape()) ctx_.logical_offset.assign(ctx_.logical_shape.ndim(), 0);
      if (static_cast<int64_t>(ctx_.logical_offset.size()) != ctx_.logical_shape.ndim()) {
        return Named(StatusCode::kInvalidArgument,
                     StrCat("register '", out.name(), "' has ", ctx_.logical_offset.size(),
                            " logical_offset entries for a logical shape of rank ",
                            ctx_.logical_shape.ndim()));
      }
    }
    ctx_.input_logical_shapes.clear();
    ctx_.input_logical_offsets.clear();
    for (int i = 0; i < num_data_inputs(); ++i) {  // each input's place, if the plan has it
      const proto::RegisterDesc& in = *data_input_register(i)->desc;
      ctx_.input_logical_shapes.push_back(in.has_logical_shape() ? ShapeOf(in.logical_shape())
                                                                 : Shape());
      ctx_.input_logical_offsets.emplace_back(in.logical_offset().begin(),
                                              in.logical_offset().end());
    }
    return Status::OK();
  }

 protected:
  Status Act(int64_t step) override {
    if (before_kernel_) before_kernel_();
    for (int i = 0; i < num_data_inputs(); ++i) ctx_.inputs[i] = data_input(i);
    for (int i = 0; i < num_data_outputs(); ++i) {
      ctx_.outputs[i] = data_output(i);
      output_buffers_[i] = ctx_.outputs[i]->raw();
    }
    ctx_.iteration = iteration(step);
    Status status;
    const bool host = ctx_.device.is_host();
    {
      KernelSlots::Hold hold(slots_);
      arena_->execute([&] { status = CallKernel(*kernel_, ctx_, run()->detect_anomaly && host); });
    }
    if (status.ok() && !host && run()->detect_anomaly) status = CheckDeviceOutputsFinite();
    if (!status.ok()) {  // Named says which op: drop CallKernel's "op 'name': " prefix
      const std::string prefix = ctx_.where() + ": ";
      const std::string& m = status.message();
      return Named(status.code(), m.rfind(prefix, 0) == 0 ? m.substr(prefix.size()) : m);
    }
    for (int i = 0; i < num_data_outputs(); ++i) {
      CHECK(ctx_.outputs[i]->raw() == output_buffers_[i])
          << name() << " replaced its output " << i << " instead of writing into it";
    }
    return Status::OK();
  }

 private:
  // detect_anomaly on a device: waits for the kernel, scans host copies.
  Status CheckDeviceOutputsFinite() {
    ctx_.stream->Synchronize();
    for (size_t i = 0; i < ctx_.outputs.size(); ++i) {
      const std::string bad =
          FirstNonFinite(device_->CloneToHost(*ctx_.outputs[i]), "output " + std::to_string(i));
      if (!bad.empty()) {
        return Status(StatusCode::kInternal,
                      StrCat("anomaly: ", ctx_.where(), " produced a non-finite value: ", bad));
      }
    }
    return Status::OK();
  }

  tbb::task_arena* arena_;
  KernelSlots* slots_;
  DeviceContext* device_;
  const KernelFn* kernel_ = nullptr;
  AttrMap attrs_;
  KernelContext ctx_;
  std::vector<const void*> output_buffers_;  // the slots' buffers: kernels write into them

 public:
  std::function<void()> before_kernel_;  // SetBeforeKernel
};

class SourceActor : public Actor {
 public:
  SourceActor(const proto::TaskProto& task, const RankEnv& env)
      : Actor(task, TaskDisplayName(task)), device_(env.device) {}
  Status Prepare() override {
    if (num_data_inputs() != 0 || num_data_outputs() != 1) {
      return Named(StatusCode::kInvalidArgument, "a source has no input and one output");
    }
    return Status::OK();
  }
  void set_feeds(std::vector<const Tensor*> feeds) { feeds_ = std::move(feeds); }

 protected:
  Status Act(int64_t step) override {
    CHECK(!feeds_.empty()) << name() << " was not fed";
    const Tensor& feed = *feeds_[feeds_.size() == 1 ? 0 : step];
    Tensor* out = data_output(0);
    CHECK(feed.device().is_host() && feed.shape() == out->shape() && feed.dtype() == out->dtype())
        << name() << ": feed";
    // On this actor's stream, ordered with the slot's readers (at once on the host).
    device_->Copy(thread()->device_stream(), out->raw(), feed.raw(), out->nbytes());
    return Status::OK();
  }

 private:
  DeviceContext* device_;
  std::vector<const Tensor*> feeds_;
};

class VariableActor : public Actor {
 public:
  explicit VariableActor(const proto::TaskProto& task) : Actor(task, TaskDisplayName(task)) {}
  Status Prepare() override {
    if (num_data_inputs() != 0 || num_data_outputs() != 1) {
      return Named(StatusCode::kInvalidArgument, "a variable has no input and one output");
    }
    return Status::OK();
  }

 protected:
  Status Act(int64_t) override { return Status::OK(); }
};

class SinkActor : public Actor {
 public:
  explicit SinkActor(const proto::TaskProto& task) : Actor(task, TaskDisplayName(task)) {}
  Status Prepare() override {
    if (num_data_inputs() != 1 || num_data_outputs() != 0) {
      return Named(StatusCode::kInvalidArgument, "a sink has one input and no output");
    }
    return Status::OK();
  }

 protected:
  Status Act(int64_t) override { return Status::OK(); }
};

// Sums its input over the acts of one value of its output (the register's
// period, k micro-batches) and leaves the mean there: the first act copies,
// the others add, the last multiplies by 1/k. The output slot is handed on
// after the last act (runtime/actor.h), so the consumer sees only the mean.
// The work is its rank's DeviceContext's, on the actor's stream: on the host
// at once, on a device enqueued (never staged through host memory).
class AccActor : public Actor {
 public:
  AccActor(const proto::TaskProto& task, const RankEnv& env)
      : Actor(task, TaskDisplayName(task)), device_(env.device) {}
  Status Prepare() override {
    if (num_data_inputs() != 1 || num_data_outputs() != 1) {
      return Named(StatusCode::kInvalidArgument, "an accumulator has one input and one output");
    }
    return Status::OK();
  }

 protected:
  Status Act(int64_t step) override {
    const Tensor& in = *data_input(0);
    Tensor* out = data_output(0);
    if (in.shape() != out->shape() || in.dtype() != out->dtype()) {
      return Named(StatusCode::kInvalidArgument,
                   StrCat("input ", in.shape(), " ", DataTypeName(in.dtype()), " != output ",
                          out->shape(), " ", DataTypeName(out->dtype())));
    }
    const int64_t k = data_output_acts_per_value(0);
    if (k > 1 && in.dtype() != DataType::kFloat32 && in.dtype() != DataType::kFloat64) {
      return Named(StatusCode::kInvalidArgument,
                   StrCat("accumulates float32 or float64 values, not ", DataTypeName(in.dtype())));
    }
    Stream* stream = thread()->device_stream();
    const int64_t position = step % k;
    if (position == 0) {
      device_->Copy(stream, out->raw(), in.raw(), in.nbytes());
    } else {
      device_->Accumulate(stream, out->raw(), in.raw(), in.numel(), in.dtype());
    }
    if (position == k - 1 && k > 1) {
      device_->ScaleByInverse(stream, out->raw(), out->numel(), out->dtype(), k);
    }
    return Status::OK();
  }

 private:
  DeviceContext* device_;
};

class BoxingActor : public Actor {
 public:
  BoxingActor(const proto::TaskProto& task, const RankEnv& env)
      : Actor(task, TaskDisplayName(task)), boxing_(env.boxing), device_(env.device) {}
  Status Prepare() override {
    if (boxing_ == nullptr || !*boxing_) {
      return Named(StatusCode::kInvalidArgument, "the runtime has no boxing function");
    }
    if (num_data_inputs() > 1 || num_data_outputs() > 1) {
      return Named(StatusCode::kInvalidArgument, "a boxing step has at most one input and output");
    }
    return Status::OK();
  }

 protected:
  bool MayAct() const override { return thread()->IsBoxingTurn(this); }
  std::string DescribeGate() const override { return "its boxing turn (plan order)"; }
  void AfterAct() override { thread()->AdvanceBoxingTurn(); }
  Status Act(int64_t) override {
    const Tensor none;
    const Tensor& in = num_data_inputs() > 0 ? *data_input(0) : none;
    Tensor* out = num_data_outputs() > 0 ? data_output(0) : nullptr;
    Status status;
    try {
      status = (*boxing_)(task_, in, out, BoxingStream{device_, thread()->device_stream()});
    } catch (const std::exception& e) {
      status = Status(StatusCode::kInternal, StrCat("boxing step threw: ", e.what()));
    }
    if (!status.ok()) return Named(status.code(), status.message());
    return Status::OK();
  }

 private:
  const BoxingFn* boxing_;
  DeviceContext* device_;
};

}  // namespace

std::string TaskDisplayName(const proto::TaskProto& task) {
  const std::string quoted = "'" + task.op_conf().name() + "'";
  switch (task.kind()) {
    case proto::TaskProto::COMPUTE:
      return task.op_conf().op_type() + " " + quoted;
    case proto::TaskProto::SOURCE:
      return "source " + quoted;
    case proto::TaskProto::VARIABLE:
      return "variable " + quoted;
    case proto::TaskProto::SINK:
      return "sink " + quoted;
    case proto::TaskProto::ACC:
      return "acc " + quoted;
    case proto::TaskProto::BOXING: {
      std::string kind = proto::BoxingConf::Kind_Name(task.boxing_conf().kind());
      for (char& c : kind) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      return "boxing " + kind + " " + quoted;
    }
    default:
      return "task " + quoted;
  }
}

std::unique_ptr<Actor> MakeActor(const proto::TaskProto& task, const RankEnv& env) {
  switch (task.kind()) {
    case proto::TaskProto::COMPUTE:
      return std::make_unique<ComputeActor>(task, env);
    case proto::TaskProto::SOURCE:
      return std::make_unique<SourceActor>(task, env);
    case proto::TaskProto::VARIABLE:
      return std::make_unique<VariableActor>(task);
    case proto::TaskProto::SINK:
      return std::make_unique<SinkActor>(task);
    case proto::TaskProto::ACC:
      return std::make_unique<AccActor>(task, env);
    case proto::TaskProto::BOXING:
      return std::make_unique<BoxingActor>(task, env);
    default:
      return nullptr;
  }
}

void SetBeforeKernel(Actor* compute, std::function<void()> hook) {
  CHECK_EQ(compute->task().kind(), proto::TaskProto::COMPUTE);
  static_cast<ComputeActor*>(compute)->before_kernel_ = std::move(hook);
}

void SetSourceFeeds(Actor* source, std::vector<const Tensor*> feeds) {
  CHECK_EQ(source->task().kind(), proto::TaskProto::SOURCE);
  static_cast<SourceActor*>(source)->set_feeds(std::move(feeds));
}

}  // namespace ofl
