// Runtime construction: plan validation, register allocation, actors, their
// wiring and threads; variables. Run() lives in runtime_run.cpp.
#include "runtime/runtime.h"

#include <algorithm>
#include <set>
#include <thread>

#include "runtime/plan_check.h"
#include "runtime/runtime_impl.h"

namespace ofl {

namespace {

#if defined(__SANITIZE_THREAD__)
constexpr bool kThreadSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
constexpr bool kThreadSanitizer = true;
#else
constexpr bool kThreadSanitizer = false;
#endif
#else
constexpr bool kThreadSanitizer = false;
#endif

Maybe<Tensor> AllocateSlot(const proto::RegisterDesc& r, DeviceAllocator* allocator) {
  std::vector<int64_t> dims(r.desc().shape().dims().begin(), r.desc().shape().dims().end());
  OFL_ASSIGN_OR_RETURN(DataType dtype, ParseDataType(r.desc().dtype()));
  return allocator->AllocateZeros(Shape(dims), dtype);
}

}  // namespace

int KernelShare(int cores, int64_t num_ranks, int64_t rank) {
  CHECK_GT(num_ranks, 0);
  if (cores <= num_ranks) return 1;
  const int64_t base = cores / num_ranks, extra = cores % num_ranks;
  return static_cast<int>(base + (rank < extra ? 1 : 0));
}

Runtime::Runtime() : impl_(std::make_unique<Impl>()) {}

Runtime::~Runtime() { impl_->threads.clear(); }  // joins before actors go

Maybe<std::unique_ptr<Runtime>> Runtime::Create(const proto::Plan& plan, RuntimeOptions options) {
  std::unique_ptr<Runtime> rt(new Runtime());
  rt->plan_ = plan;
  OFL_RETURN_IF_ERROR(rt->Build(std::move(options)));
  return rt;
}

Status Runtime::Build(RuntimeOptions options) {
  Impl& m = *impl_;
  m.options = std::move(options);
  const proto::Plan& plan = plan_;
  const int64_t ranks = plan.num_ranks();
  OFL_ENSURE(m.options.timeout.count() > 0, "runtime: timeout must be positive");
  OFL_RETURN_IF_ERROR(CheckPlan(plan).status());  // before anything is allocated

  // Kernel threads and allocators, per rank.
  int cores = m.options.num_threads > 0 ? m.options.num_threads
                                        : static_cast<int>(std::thread::hardware_concurrency());
  cores = std::max(cores, 1);
  // Each stream of a rank that runs kernels has a master slot of its own in
  // the rank's arena (so no stream waits for another to leave it); workers
  // fill the rest of the share.
  std::vector<std::set<int64_t>> compute_streams(ranks);
  for (const auto& t : plan.tasks()) {
    if (t.kind() == proto::TaskProto::COMPUTE) compute_streams[t.rank()].insert(t.stream());
  }
  for (int64_t r = 0; r < ranks; ++r) {
    shares_.push_back(kThreadSanitizer ? 1 : KernelShare(cores, ranks, r));
    const int masters = std::max<int>(1, static_cast<int>(compute_streams[r].size()));
    m.allocators.push_back(std::make_unique<DeviceAllocator>());
    m.arenas.push_back(
        std::make_unique<tbb::task_arena>(std::max(shares_.back(), masters), masters));
    m.envs.push_back(RankEnv{m.arenas.back().get(), &m.options.boxing});
  }

  // Registers: control ones (some task's ctrl_outputs) carry no data.
  std::set<int64_t> control;
  for (const auto& t : plan.tasks())
    control.insert(t.ctrl_outputs().begin(), t.ctrl_outputs().end());
  m.registers.resize(plan.registers_size());
  m.producer.assign(plan.registers_size(), -1);
  for (const auto& r : plan.registers()) {
    RuntimeRegister& reg = m.registers[r.id()];
    reg.desc = &r;
    reg.control = control.count(r.id()) > 0;
    for (int64_t s = 0; s < r.num_slots(); ++s) {
      OFL_ASSIGN_OR_RETURN(Tensor slot, AllocateSlot(r, m.allocators[r.rank()].get()));
      reg.slots.push_back(slot);
    }
  }

  // The undo copy runs while no kernel does: on all C kernel threads (one
  // under ThreadSanitizer, as the ranks' arenas).
  m.undo = std::make_unique<StepUndo>(plan, &m.registers, m.allocators,
                                      kThreadSanitizer ? 1 : cores, m.options.transactional);

  // Actors and their registers.
  for (const auto& t : plan.tasks()) {
    std::unique_ptr<Actor> actor = MakeActor(t, m.envs[t.rank()]);
    OFL_ENSURE(actor != nullptr, "plan: task ", t.id(), " has unknown kind ", t.kind());
    std::vector<int64_t> written(t.outputs().begin(), t.outputs().end());
    written.insert(written.end(), t.ctrl_outputs().begin(), t.ctrl_outputs().end());
    for (int64_t id : written) {
      OFL_ENSURE(m.producer[id] < 0, "plan: register '", plan.registers(id).name(),
                 "' is written by task ", m.producer[id], " and task ", t.id());
      m.producer[id] = t.id();
      actor->AddOutput(&m.registers[id]);
    }
    for (int64_t id : t.inputs()) actor->AddInput(&m.registers[id], true);
    for (int64_t id : t.ctrl_inputs()) actor->AddInput(&m.registers[id], false);
    m.task_names.push_back(actor->name());
    m.actors.push_back(std::move(actor));
  }
  for (const auto& t : plan.tasks()) {
    std::set<int64_t> read(t.inputs().begin(), t.inputs().end());
    read.insert(t.ctrl_inputs().begin(), t.ctrl_inputs().end());
    for (int64_t id : read) {
      OFL_ENSURE(m.producer[id] >= 0, "plan: task ", t.id(), " (", m.task_names[t.id()],
                 ") reads register '", plan.registers(id).name(), "' that no task writes");
      Actor::Connect(m.actors[m.producer[id]].get(), &m.registers[id], m.actors[t.id()].get());
    }
  }
  for (const auto& t : plan.tasks()) {
    OFL_RETURN_IF_ERROR(m.actors[t.id()]->Prepare());
    const TensorKey key{t.op_conf().name(), t.rank()};
    if (t.kind() == proto::TaskProto::SOURCE) {
      OFL_ENSURE(m.sources.emplace(key, t.id()).second, "plan: two sources '", key.name,
                 "' on rank ", key.rank);
    } else if (t.kind() == proto::TaskProto::VARIABLE) {
      const proto::RegisterDesc& r = plan.registers(t.outputs(0));
      OFL_ENSURE(r.num_slots() == 1, "plan: variable '", key.name, "' has a register of ",
                 r.num_slots(), " slots, not 1");
      OFL_ENSURE(m.variables.emplace(key, r.id()).second, "plan: two variables '", key.name,
                 "' on rank ", key.rank);
    }
  }

  // One thread per (rank, stream); actors join in plan order.
  std::map<std::pair<int64_t, int64_t>, ActorThread*> by_stream;
  for (const auto& t : plan.tasks()) {
    ActorThread*& thread = by_stream[{t.rank(), t.stream()}];
    if (thread == nullptr) {
      m.threads.push_back(std::make_unique<ActorThread>(t.rank(), t.stream(), shares_[t.rank()],
                                                        m.options.spin_us));
      thread = m.threads.back().get();
    }
    thread->AddActor(m.actors[t.id()].get());
  }
  for (auto& thread : m.threads) thread->Start();
  return Status::OK();
}

Status Runtime::SetVariable(const std::string& name, int64_t rank, const Tensor& value) {
  auto it = impl_->variables.find({name, rank});
  OFL_ENSURE(it != impl_->variables.end(), "unknown variable '", name, "' on rank ", rank);
  Tensor& reg = impl_->registers[it->second].slots[0];
  OFL_ENSURE(value.shape() == reg.shape() && value.dtype() == reg.dtype(), "variable '", name,
             "' on rank ", rank, " has shape ", reg.shape(), " ", DataTypeName(reg.dtype()),
             ", got ", value.shape(), " ", DataTypeName(value.dtype()));
  reg.CopyFrom(value);
  return Status::OK();
}

Maybe<Tensor> Runtime::GetVariable(const std::string& name, int64_t rank) const {
  auto it = impl_->variables.find({name, rank});
  if (it == impl_->variables.end()) {
    return NotFound("unknown variable '", name, "' on rank ", rank);
  }
  return impl_->registers[it->second].slots[0].Clone();
}

std::vector<TensorKey> Runtime::VariableKeys() const {
  std::vector<TensorKey> keys;
  for (const auto& [key, id] : impl_->variables) keys.push_back(key);
  return keys;
}

void Runtime::set_detect_anomaly(bool on) { impl_->options.detect_anomaly = on; }

std::vector<int64_t> Runtime::peak_bytes() const {
  std::vector<int64_t> out;
  for (const auto& a : impl_->allocators) out.push_back(a->peak_bytes());
  return out;
}

std::vector<int64_t> Runtime::undo_bytes() const {
  return impl_->undo->bytes_per_rank();
}

std::vector<int64_t> Runtime::live_bytes() const {
  std::vector<int64_t> out;
  for (const auto& a : impl_->allocators) out.push_back(a->live_bytes());
  return out;
}

}  // namespace ofl
