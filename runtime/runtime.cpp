// Runtime construction: plan validation, register allocation, actors, their
// wiring and threads; variables. Run() lives in runtime_run.cpp.
#include "runtime/runtime.h"

#include <algorithm>
#include <cstring>
#include <set>
#include <thread>

#include "oneflow_lite/core/device_backend.h"
#include "runtime/memory_plan.h"
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

// A zeroed slot of `r` on its rank's device.
Maybe<Tensor> AllocateSlot(const proto::RegisterDesc& r, DeviceContext* device) {
  std::vector<int64_t> dims(r.desc().shape().dims().begin(), r.desc().shape().dims().end());
  OFL_ASSIGN_OR_RETURN(DataType dtype, ParseDataType(r.desc().dtype()));
  Maybe<Tensor> slot = device->allocator()->NewTensor(Shape(dims), dtype);
  if (!slot.ok()) {
    return Status(slot.status().code(),
                  StrCat("register '", r.name(), "': ", slot.status().message()));
  }
  Tensor t = std::move(slot).value();
  device->FillSync(t.raw(), 0, t.nbytes());
  return t;
}

// One rank's planned registers (runtime/memory_plan.h) and their arena,
// allocated once by the rank's allocator and zeroed as AllocateSlot zeroes.
struct RankArena {
  MemoryPlan plan;
  std::shared_ptr<void> buffer;
};

// Per rank: the arena of each local host rank when `on` (with the undo
// copies when `undo_copies`); empty plans otherwise.
Maybe<std::vector<RankArena>> CreateArenas(const proto::Plan& plan,
                                           const std::vector<int64_t>& local_ranks,
                                           const std::vector<Allocator*>& allocators,
                                           const std::vector<int64_t>& producer, bool on,
                                           bool undo_copies) {
  std::vector<RankArena> arenas(plan.num_ranks());
  for (int64_t r : local_ranks) {
    arenas[r].plan.offset.assign(plan.registers_size(), -1);
    arenas[r].plan.undo_offset.assign(plan.registers_size(), -1);
    arenas[r].plan.spare_offset.assign(plan.registers_size(), -1);
    if (!on || !allocators[r]->device().is_host()) continue;
    MemoryPlan p = PlanRegisterMemory(plan, r, producer, undo_copies);
    if (p.arena_bytes == 0) continue;
    Maybe<std::shared_ptr<void>> buffer = allocators[r]->AllocateShared(p.arena_bytes);
    if (!buffer.ok()) {
      return Status(buffer.status().code(),
                    StrCat("rank ", r, ": register arena: ", buffer.status().message()));
    }
    arenas[r].buffer = std::move(buffer).value();
    std::memset(arenas[r].buffer.get(), 0, p.arena_bytes);
    arenas[r].plan = std::move(p);
  }
  return arenas;
}

// A view of `r`'s shape and dtype into its rank's arena at `offset`: the
// slot of a planned register, a spare slot, or an undo copy.
Tensor ArenaSlot(const proto::RegisterDesc& r, const RankArena& arena, int64_t offset,
                 const Device& device) {
  std::vector<int64_t> dims(r.desc().shape().dims().begin(), r.desc().shape().dims().end());
  char* base = static_cast<char*>(arena.buffer.get()) + offset;
  return Tensor(Shape(dims), ParseDataType(r.desc().dtype()).value(), arena.buffer, base, device);
}

// Each local rank's device (CheckDevices made them agree): its tasks', else
// its registers', else cpu:<rank>.
Status CreateDevices(const proto::Plan& plan, const std::vector<int64_t>& local_ranks,
                     const RuntimeOptions& options,
                     std::vector<std::unique_ptr<DeviceContext>>* devices) {
  std::vector<Device> device(plan.num_ranks());
  for (int64_t r = 0; r < plan.num_ranks(); ++r)
    device[r] = {DeviceType::kCPU, static_cast<int>(r)};
  for (const auto& reg : plan.registers()) device[reg.rank()] = DeviceOf(reg).value();
  for (const auto& t : plan.tasks()) device[t.rank()] = DeviceOf(t).value();
  devices->resize(plan.num_ranks());
  for (int64_t r : local_ranks) {
    Maybe<std::unique_ptr<DeviceContext>> context =
        options.make_device ? options.make_device(device[r]) : CreateDeviceContext(device[r]);
    if (!context.ok()) {
      return Status(context.status().code(), StrCat("rank ", r, ": ", context.status().message()));
    }
    (*devices)[r] = std::move(context).value();
    CHECK((*devices)[r] != nullptr) << "make_device(" << device[r] << ") made nothing";
    CHECK((*devices)[r]->device() == device[r])
        << "make_device(" << device[r] << ") made " << (*devices)[r]->device();
  }
  return Status::OK();
}

// " (rank 3 belongs to process 1; this is process 0)" for a rank of another process.
std::string ProcessNote(const proto::Plan& plan, int64_t rank, int64_t process) {
  if (rank < 0 || rank >= plan.num_ranks() || ProcessOfRank(plan, rank) == process) return "";
  return StrCat(" (rank ", rank, " belongs to process ", ProcessOfRank(plan, rank),
                "; this is process ", process, ")");
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
  OFL_ENSURE(m.options.timeout.count() > 0, "runtime: timeout must be positive");
  // Before anything is allocated; producer[register] = its writing task, over
  // every process's tasks.
  OFL_ASSIGN_OR_RETURN(m.producer, CheckPlan(plan_));
  // This process's ranks (all of them in a world of one process). A process
  // may own no rank of a plan (a placement smaller than the world): its runs
  // do nothing and return at once.
  for (int64_t r = 0; r < plan_.num_ranks(); ++r) {
    if (m.IsLocal(plan_, r)) m.local_ranks.push_back(r);
  }
  int cores = m.options.num_threads > 0 ? m.options.num_threads
                                        : static_cast<int>(std::thread::hardware_concurrency());
  cores = std::max(cores, 1);
  OFL_RETURN_IF_ERROR(m.CreateRanks(plan_, cores, &shares_));
  OFL_RETURN_IF_ERROR(m.CreateRegisters(plan_, cores));
  OFL_RETURN_IF_ERROR(m.CreateActors(plan_));
  m.CreateThreads(plan_, shares_);
  OFL_RETURN_IF_ERROR(m.PrepareActors(plan_));
  for (auto& thread : m.threads) thread->Start();
  return Status::OK();
}

bool Runtime::Impl::IsLocal(const proto::Plan& plan, int64_t rank) const {
  return ProcessOfRank(plan, rank) == options.process;
}

Status Runtime::Impl::CreateRanks(const proto::Plan& plan, int cores, std::vector<int>* shares) {
  const int64_t ranks = plan.num_ranks();
  // Each stream of a rank that runs kernels has a master slot of its own in
  // the rank's arena (so no stream waits for another to leave it); workers
  // fill the rest of the share.
  std::vector<std::set<int64_t>> compute_streams(ranks);
  for (const auto& t : plan.tasks()) {
    if (t.kind() == proto::TaskProto::COMPUTE) compute_streams[t.rank()].insert(t.stream());
  }
  const int64_t num_local = static_cast<int64_t>(local_ranks.size());
  shares->assign(ranks, 0);  // other processes' ranks: share 0
  arenas.resize(ranks);
  envs.resize(ranks);
  OFL_RETURN_IF_ERROR(CreateDevices(plan, local_ranks, options, &devices));
  // More ranks than threads: one thread each, and at most `cores` kernels at once.
  if (!kThreadSanitizer && num_local > cores) kernel_slots = std::make_unique<KernelSlots>(cores);
  for (int64_t i = 0; i < num_local; ++i) {
    const int64_t r = local_ranks[i];
    (*shares)[r] = kThreadSanitizer ? 1 : KernelShare(cores, num_local, i);
    const int masters = std::max<int>(1, static_cast<int>(compute_streams[r].size()));
    arenas[r] = std::make_unique<tbb::task_arena>(std::max((*shares)[r], masters), masters);
    envs[r] = RankEnv{arenas[r].get(), &options.boxing, devices[r].get(), kernel_slots.get()};
  }
  return Status::OK();
}

Status Runtime::Impl::CreateRegisters(const proto::Plan& plan, int cores) {
  std::vector<Allocator*> allocators(plan.num_ranks(), nullptr);
  for (int64_t r : local_ranks) allocators[r] = devices[r]->allocator();
  // Control registers (some task's ctrl_outputs) carry no data.
  std::set<int64_t> control;
  for (const auto& t : plan.tasks())
    control.insert(t.ctrl_outputs().begin(), t.ctrl_outputs().end());
  registers.resize(plan.registers_size());
  OFL_ASSIGN_OR_RETURN(std::vector<RankArena> rank_arenas,
                       CreateArenas(plan, local_ranks, allocators, producer, options.plan_memory,
                                    options.transactional));
  std::vector<Tensor> undo_in_arena(plan.registers_size());
  std::vector<int64_t> undo_arena_bytes(plan.num_ranks(), 0);
  for (const auto& r : plan.registers()) {
    RuntimeRegister& reg = registers[r.id()];
    reg.desc = &r;
    reg.control = control.count(r.id()) > 0;
    if (!IsLocal(plan, r.rank())) continue;
    const RankArena& arena = rank_arenas[r.rank()];
    undo_arena_bytes[r.rank()] = arena.plan.undo_arena_bytes;
    if (arena.plan.undo_offset[r.id()] >= 0) {
      undo_in_arena[r.id()] =
          ArenaSlot(r, arena, arena.plan.undo_offset[r.id()], allocators[r.rank()]->device());
    }
    if (arena.plan.offset[r.id()] >= 0) {
      reg.slots.push_back(
          ArenaSlot(r, arena, arena.plan.offset[r.id()], allocators[r.rank()]->device()));
      continue;
    }
    OFL_ASSIGN_OR_RETURN(Tensor first, AllocateSlot(r, devices[r.rank()].get()));
    reg.slots.push_back(first);
    const int64_t spare = arena.plan.spare_offset[r.id()];
    for (int64_t s = 1; s < r.num_slots(); ++s) {  // slots 1..: the arena's spare slots, or own
      if (spare >= 0) {
        const int64_t at = spare + (s - 1) * MemoryPlan::Aligned(first.nbytes());
        reg.slots.push_back(ArenaSlot(r, arena, at, allocators[r.rank()]->device()));
        continue;
      }
      OFL_ASSIGN_OR_RETURN(Tensor slot, AllocateSlot(r, devices[r.rank()].get()));
      reg.slots.push_back(slot);
    }
  }
  // The undo copy runs while no kernel does: on all C kernel threads (one
  // under ThreadSanitizer, as the ranks' arenas).
  undo = std::make_unique<StepUndo>(plan, &registers, devices, kThreadSanitizer ? 1 : cores,
                                    options.transactional, undo_in_arena, undo_arena_bytes);
  return Status::OK();
}

Status Runtime::Impl::CreateActors(const proto::Plan& plan) {
  actor_of_task.assign(plan.tasks_size(), nullptr);
  for (const auto& t : plan.tasks()) {
    task_names.push_back(TaskDisplayName(t));
    if (!IsLocal(plan, t.rank())) continue;
    std::unique_ptr<Actor> actor = MakeActor(t, envs[t.rank()]);
    OFL_ENSURE(actor != nullptr, "plan: task ", t.id(), " has unknown kind ", t.kind());
    std::vector<int64_t> written(t.outputs().begin(), t.outputs().end());
    written.insert(written.end(), t.ctrl_outputs().begin(), t.ctrl_outputs().end());
    for (int64_t id : written) actor->AddOutput(&registers[id]);
    for (int64_t id : t.inputs()) actor->AddInput(&registers[id], true);
    for (int64_t id : t.ctrl_inputs()) actor->AddInput(&registers[id], false);
    task_names.back() = actor->name();
    actor_of_task[t.id()] = actor.get();
    actors.push_back(std::move(actor));
  }
  // Each register's reader meets its writer.
  for (const auto& t : plan.tasks()) {
    if (!IsLocal(plan, t.rank())) continue;
    std::set<int64_t> read(t.inputs().begin(), t.inputs().end());
    read.insert(t.ctrl_inputs().begin(), t.ctrl_inputs().end());
    for (int64_t id : read) {
      OFL_ENSURE(producer[id] >= 0, "plan: task ", t.id(), " (", task_names[t.id()],
                 ") reads register '", plan.registers(id).name(), "' that no task writes");
      Actor::Connect(actor_of_task[producer[id]], &registers[id], actor_of_task[t.id()]);
    }
  }
  // The writers of undo copies in the arena save them before their kernel.
  for (int64_t task : undo->SavingTasks()) {
    StepUndo* u = undo.get();
    SetBeforeKernel(actor_of_task[task], [u, task] { u->SaveBefore(task); });
  }
  return Status::OK();
}

void Runtime::Impl::CreateThreads(const proto::Plan& plan, const std::vector<int>& shares) {
  // One thread per (rank, stream), each with a stream of the rank's device;
  // actors join in plan order. Then the events of registers between streams.
  std::map<std::pair<int64_t, int64_t>, ActorThread*> by_stream;
  for (const auto& t : plan.tasks()) {
    if (!IsLocal(plan, t.rank())) continue;
    ActorThread*& thread = by_stream[{t.rank(), t.stream()}];
    if (thread == nullptr) {
      threads.push_back(std::make_unique<ActorThread>(t.rank(), t.stream(), shares[t.rank()],
                                                      options.spin_us,
                                                      devices[t.rank()]->CreateStream()));
      thread = threads.back().get();
    }
    thread->AddActor(actor_of_task[t.id()]);
  }
  for (const auto& t : plan.tasks()) {
    if (IsLocal(plan, t.rank())) actor_of_task[t.id()]->CreateEvents(devices[t.rank()].get());
  }
}

Status Runtime::Impl::PrepareActors(const proto::Plan& plan) {
  for (const auto& t : plan.tasks()) {
    if (!IsLocal(plan, t.rank())) continue;
    OFL_RETURN_IF_ERROR(actor_of_task[t.id()]->Prepare());
    const TensorKey key{t.op_conf().name(), t.rank()};
    if (t.kind() == proto::TaskProto::SOURCE) {
      OFL_ENSURE(sources.emplace(key, t.id()).second, "plan: two sources '", key.name, "' on rank ",
                 key.rank);
    } else if (t.kind() == proto::TaskProto::VARIABLE) {
      const proto::RegisterDesc& r = plan.registers(t.outputs(0));
      OFL_ENSURE(r.num_slots() == 1, "plan: variable '", key.name, "' has a register of ",
                 r.num_slots(), " slots, not 1");
      OFL_ENSURE(variables.emplace(key, r.id()).second, "plan: two variables '", key.name,
                 "' on rank ", key.rank);
    }
  }
  return Status::OK();
}

Status Runtime::SetVariable(const std::string& name, int64_t rank, const Tensor& value) {
  auto it = impl_->variables.find({name, rank});
  OFL_ENSURE(it != impl_->variables.end(), "unknown variable '", name, "' on rank ", rank,
             ProcessNote(plan_, rank, impl_->options.process));
  Tensor& reg = impl_->registers[it->second].slots[0];
  OFL_ENSURE(value.shape() == reg.shape() && value.dtype() == reg.dtype(), "variable '", name,
             "' on rank ", rank, " has shape ", reg.shape(), " ", DataTypeName(reg.dtype()),
             ", got ", value.shape(), " ", DataTypeName(value.dtype()));
  if (!reg.device().is_host() && value.device().is_host()) {  // host -> device
    impl_->devices[rank]->CopySync(reg.raw(), value.raw(), reg.nbytes());
    return Status::OK();
  }
  OFL_RETURN_IF_ERROR(
      Tensor::CheckCopy(reg, value, StrCat("variable '", name, "' on rank ", rank)));
  reg.CopyFrom(value);
  return Status::OK();
}

Maybe<Tensor> Runtime::GetVariable(const std::string& name, int64_t rank) const {
  auto it = impl_->variables.find({name, rank});
  if (it == impl_->variables.end()) {
    return NotFound("unknown variable '", name, "' on rank ", rank,
                    ProcessNote(plan_, rank, impl_->options.process));
  }
  return impl_->devices[rank]->CloneToHost(impl_->registers[it->second].slots[0]);
}

std::vector<TensorKey> Runtime::VariableKeys() const {
  std::vector<TensorKey> keys;
  for (const auto& [key, id] : impl_->variables) keys.push_back(key);
  return keys;
}

void Runtime::set_detect_anomaly(bool on) { impl_->options.detect_anomaly = on; }

const std::vector<int64_t>& Runtime::local_ranks() const { return impl_->local_ranks; }

std::vector<int64_t> Runtime::peak_bytes() const {
  std::vector<int64_t> out;
  for (const auto& d : impl_->devices) out.push_back(d ? d->allocator()->peak_bytes() : 0);
  return out;
}

std::vector<int64_t> Runtime::undo_bytes() const { return impl_->undo->bytes_per_rank(); }

std::vector<int64_t> Runtime::live_bytes() const {
  std::vector<int64_t> out;
  for (const auto& d : impl_->devices) out.push_back(d ? d->allocator()->live_bytes() : 0);
  return out;
}

}  // namespace ofl
