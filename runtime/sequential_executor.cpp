#include "runtime/sequential_executor.h"

namespace ofl {

namespace {
Maybe<Tensor> AllocateRegister(const proto::RegisterDesc& r, DeviceAllocator* allocator) {
  std::vector<int64_t> dims(r.desc().shape().dims().begin(), r.desc().shape().dims().end());
  OFL_ASSIGN_OR_RETURN(DataType dtype, ParseDataType(r.desc().dtype()));
  return allocator->AllocateZeros(Shape(dims), dtype);
}
}  // namespace

Maybe<std::unique_ptr<SequentialExecutor>> SequentialExecutor::Create(const proto::Plan& plan) {
  std::unique_ptr<SequentialExecutor> ex(new SequentialExecutor());
  ex->plan_ = plan;
  for (const auto& r : plan.registers()) {
    CHECK_EQ(r.id(), static_cast<int64_t>(ex->registers_.size())) << "register ids not dense";
    OFL_ASSIGN_OR_RETURN(Tensor t, AllocateRegister(r, &ex->allocator_));
    ex->registers_.push_back(t);
    ex->by_name_[r.name()] = r.id();
  }
  for (const auto& task : plan.tasks()) {
    const std::string& name = task.op_conf().name();
    switch (task.kind()) {
      case proto::TaskProto::SOURCE: ex->sources_[name] = task.outputs(0); break;
      case proto::TaskProto::VARIABLE: ex->variables_[name] = task.outputs(0); break;
      case proto::TaskProto::SINK: break;
      case proto::TaskProto::COMPUTE: {
        auto step = std::make_unique<Step>();
        OFL_ASSIGN_OR_RETURN(step->kernel,
                             KernelRegistry::Find(task.op_conf().op_type(), DeviceType::kCPU));
        for (const auto& [k, v] : task.op_conf().attrs()) step->attrs.Set(k, AttrFromProto(v));
        step->ctx.op_type = task.op_conf().op_type();
        step->ctx.op_name = name;
        for (int64_t id : task.inputs()) step->ctx.inputs.push_back(&ex->registers_.at(id));
        for (int64_t id : task.outputs()) step->ctx.outputs.push_back(&ex->registers_.at(id));
        if (!step->ctx.outputs.empty()) {
          step->ctx.logical_shape = step->ctx.outputs[0]->shape();
          step->ctx.logical_offset.assign(step->ctx.logical_shape.ndim(), 0);
        }
        ex->steps_.push_back(std::move(step));
        break;
      }
      default: LOG(FATAL) << "unknown task kind " << task.kind();
    }
  }
  // attrs live in the Step; point the contexts at them once the vector is final.
  for (auto& step : ex->steps_) step->ctx.attrs = &step->attrs;
  return ex;
}

Status SequentialExecutor::Run(const std::map<std::string, Tensor>& feeds,
                               const std::vector<std::string>& fetches,
                               std::vector<Tensor>* results) {
  for (const auto& [name, id] : sources_) {
    OFL_ENSURE(feeds.count(name) > 0, "run: input '", name, "' was not fed");
  }
  for (const auto& [name, t] : feeds) {
    auto it = sources_.find(name);
    OFL_ENSURE(it != sources_.end(), "run: '", name, "' is not an input of the graph");
    const Tensor& reg = registers_[it->second];
    OFL_ENSURE(t.shape() == reg.shape() && t.dtype() == reg.dtype(), "run: input '", name,
               "' expects shape ", reg.shape(), " ", DataTypeName(reg.dtype()), ", got ",
               t.shape(), " ", DataTypeName(t.dtype()));
  }
  for (const std::string& f : fetches) {
    OFL_ENSURE(by_name_.count(f) > 0, "run: cannot fetch unknown tensor '", f, "'");
  }
  for (const auto& [name, t] : feeds) registers_[sources_.at(name)].CopyFrom(t);
  // A failing kernel stops the run; the next Run starts a new iteration.
  const int64_t iteration = iteration_++;
  for (auto& step : steps_) {
    step->ctx.iteration = iteration;
    OFL_RETURN_IF_ERROR(CallKernel(*step->kernel, step->ctx, detect_anomaly_));
  }
  results->clear();
  for (const std::string& f : fetches) results->push_back(registers_[by_name_.at(f)].Clone());
  return Status::OK();
}

Status SequentialExecutor::SetVariable(const std::string& name, const Tensor& value) {
  auto it = variables_.find(name);
  OFL_ENSURE(it != variables_.end(), "unknown variable '", name, "'");
  Tensor& reg = registers_[it->second];
  OFL_ENSURE(value.shape() == reg.shape() && value.dtype() == reg.dtype(), "variable '", name,
             "' has shape ", reg.shape(), " ", DataTypeName(reg.dtype()), ", got ", value.shape(),
             " ", DataTypeName(value.dtype()));
  reg.CopyFrom(value);
  return Status::OK();
}

Maybe<Tensor> SequentialExecutor::GetVariable(const std::string& name) const {
  auto it = variables_.find(name);
  if (it == variables_.end()) return NotFound("unknown variable '", name, "'");
  return registers_[it->second].Clone();
}

std::vector<std::string> SequentialExecutor::VariableNames() const {
  std::vector<std::string> names;
  for (const auto& [name, id] : variables_) names.push_back(name);
  return names;
}

}  // namespace ofl
