// Plan checks of runtime/plan_check.h.
#include "runtime/plan_check.h"

#include <algorithm>
#include <map>
#include <set>

#include "ops/op_registry.h"
#include "runtime/actor_kinds.h"

namespace ofl {

namespace {

Status CheckRegisters(const proto::Plan& plan) {
  for (int i = 0; i < plan.registers_size(); ++i) {
    const proto::RegisterDesc& r = plan.registers(i);
    OFL_ENSURE(r.id() == i, "plan: register '", r.name(), "' has id ", r.id(), " at position ", i,
               " (ids must be dense)");
    OFL_ENSURE(r.rank() >= 0 && r.rank() < plan.num_ranks(), "plan: register '", r.name(),
               "' is on rank ", r.rank(), " of a plan with ", plan.num_ranks(), " ranks");
    OFL_ENSURE(r.num_slots() >= 1, "plan: register '", r.name(), "' has ", r.num_slots(), " slots");
    OFL_ENSURE(!r.persistent() || r.num_slots() == 1, "plan: persistent register '", r.name(),
               "' has ", r.num_slots(), " slots, not 1");
    // Registers are allocated: their shapes must fit int64 and the allocator.
    const auto& dims = r.desc().shape().dims();
    Maybe<DataType> dtype = ParseDataType(r.desc().dtype());
    OFL_RETURN_IF_ERROR(dtype.status());
    OFL_RETURN_IF_ERROR(CheckAllocation(Shape(std::vector<int64_t>(dims.begin(), dims.end())),
                                        dtype.value(), "plan: register '" + r.name() + "'"));
  }
  return Status::OK();
}

Status CheckTask(const proto::Plan& plan, int i) {
  const proto::TaskProto& t = plan.tasks(i);
  const std::string name = TaskDisplayName(t);
  OFL_ENSURE(t.id() == i, "plan: task ", t.id(), " (", name, ") is at position ", i,
             " (ids must be dense)");
  OFL_ENSURE(t.rank() >= 0 && t.rank() < plan.num_ranks(), "plan: task ", i, " (", name,
             ") is on rank ", t.rank(), " of a plan with ", plan.num_ranks(), " ranks");
  OFL_ENSURE(t.stream() >= 0, "plan: task ", i, " (", name, ") has stream ", t.stream());
  // Binary protobuf keeps enum values it does not know.
  OFL_ENSURE(proto::TaskProto::Kind_IsValid(t.kind()), "plan: task ", i, " (", name,
             ") has unknown kind ", static_cast<int>(t.kind()));
  const bool one_output =
      t.kind() == proto::TaskProto::SOURCE || t.kind() == proto::TaskProto::VARIABLE;
  OFL_ENSURE(!one_output || t.outputs_size() >= 1, "plan: ", proto::TaskProto::Kind_Name(t.kind()),
             " task ", i, " (", name, ") has no output register");
  OFL_ENSURE(t.kind() != proto::TaskProto::SINK || t.inputs_size() >= 1, "plan: SINK task ", i,
             " (", name, ") has no input register");
  auto check_ids = [&](const auto& ids) -> Status {
    for (int64_t id : ids) {
      OFL_ENSURE(id >= 0 && id < plan.registers_size(), "plan: task ", i, " (", name,
                 ") names register ", id, " of ", plan.registers_size());
    }
    return Status::OK();
  };
  for (const auto& [key, value] : t.op_conf().attrs()) {
    OFL_ENSURE(value.value_case() != proto::AttrValue::VALUE_NOT_SET, "plan: task ", i, " (", name,
               ") has attribute '", key, "' with no value");
  }
  OFL_RETURN_IF_ERROR(check_ids(t.inputs()));
  OFL_RETURN_IF_ERROR(check_ids(t.outputs()));
  OFL_RETURN_IF_ERROR(check_ids(t.ctrl_outputs()));
  return check_ids(t.ctrl_inputs());
}

// Every register a task reads, data and ctrl, once.
std::vector<int64_t> ReadRegisters(const proto::TaskProto& t) {
  std::set<int64_t> read(t.inputs().begin(), t.inputs().end());
  read.insert(t.ctrl_inputs().begin(), t.ctrl_inputs().end());
  return {read.begin(), read.end()};
}

// Tasks reachable from `from` (itself excluded) through `next`.
template <typename Next>
std::vector<bool> Reach(int64_t from, size_t num_tasks, const Next& next) {
  std::vector<bool> seen(num_tasks, false);
  std::vector<int64_t> stack = {from};
  while (!stack.empty()) {
    const int64_t t = stack.back();
    stack.pop_back();
    next(t, [&](int64_t u) {
      if (u >= 0 && !seen[u]) {
        seen[u] = true;
        stack.push_back(u);
      }
    });
  }
  return seen;
}

}  // namespace

Status CheckPlanShape(const proto::Plan& plan) {
  OFL_RETURN_IF_ERROR(CheckRegisters(plan));
  for (int i = 0; i < plan.tasks_size(); ++i) OFL_RETURN_IF_ERROR(CheckTask(plan, i));
  return Status::OK();
}

Status CheckInPlaceOrder(const proto::Plan& plan, const std::vector<int64_t>& producer) {
  const size_t n = plan.tasks_size();
  std::vector<std::vector<int64_t>> readers(plan.registers_size());
  for (const auto& t : plan.tasks()) {
    for (int64_t id : ReadRegisters(t)) readers[id].push_back(t.id());
  }
  auto backward = [&](int64_t t, const auto& visit) {
    for (int64_t id : ReadRegisters(plan.tasks(t))) visit(producer[id]);
  };
  auto forward = [&](int64_t t, const auto& visit) {
    for (const auto* ids : {&plan.tasks(t).outputs(), &plan.tasks(t).ctrl_outputs()}) {
      for (int64_t id : *ids) {
        for (int64_t r : readers[id]) visit(r);
      }
    }
  };
  for (const auto& w : plan.tasks()) {
    if (w.kind() != proto::TaskProto::COMPUTE) continue;
    Maybe<const OpDef*> def = OpRegistry::Find(w.op_conf().op_type());
    if (!def.ok()) continue;
    std::vector<bool> before, after;
    for (int i = 0; i < w.inputs_size(); ++i) {
      if (!def.value()->is_mutable_input(i)) continue;
      for (int64_t r : readers[w.inputs(i)]) {
        if (r == w.id()) continue;
        if (before.empty()) {
          before = Reach(w.id(), n, backward);
          after = Reach(w.id(), n, forward);
        }
        OFL_ENSURE(before[r] || after[r], "plan: task ", r, " (", TaskDisplayName(plan.tasks(r)),
                   ") reads register '", plan.registers(w.inputs(i)).name(), "' that task ", w.id(),
                   " (", TaskDisplayName(w),
                   ") updates in place, and no data or ctrl "
                   "edge orders the two (add a ctrl edge from the reader to the update)");
      }
    }
  }
  return Status::OK();
}

namespace {
int64_t Period(int64_t p) { return p > 1 ? p : 1; }
}  // namespace

Status CheckActRatios(const proto::Plan& plan, const std::vector<int64_t>& producer) {
  std::map<std::pair<int64_t, int64_t>, int64_t> boxing_period;  // (rank, stream) -> period
  for (const auto& t : plan.tasks()) {
    const int64_t tp = Period(t.period());
    OFL_ENSURE(t.period() >= 0, "plan: task ", t.id(), " (", TaskDisplayName(t), ") has period ",
               t.period());
    for (const auto* ids : {&t.inputs(), &t.ctrl_inputs()}) {
      for (int64_t id : *ids) {
        const int64_t rp = Period(plan.registers(id).period());
        OFL_ENSURE(rp % tp == 0, "plan: task ", t.id(), " (", TaskDisplayName(t),
                   ") acts once per ", tp, " iterations but reads register '",
                   plan.registers(id).name(), "' written once per ", rp,
                   " (a reader cannot take several values per act)");
      }
    }
    for (const auto* ids : {&t.outputs(), &t.ctrl_outputs()}) {
      for (int64_t id : *ids) {
        const proto::RegisterDesc& r = plan.registers(id);
        const int64_t rp = Period(r.period());
        OFL_ENSURE(rp % tp == 0 && (!r.persistent() || rp == tp), "plan: task ", t.id(), " (",
                   TaskDisplayName(t), ") acts once per ", tp, " iterations and writes register '",
                   r.name(), "' of period ", rp);
      }
    }
    if (t.kind() != proto::TaskProto::BOXING) continue;
    auto [it, added] = boxing_period.emplace(std::make_pair(t.rank(), t.stream()), tp);
    OFL_ENSURE(added || it->second == tp, "plan: boxing task ", t.id(), " (", TaskDisplayName(t),
               ") has period ", tp, " but rank ", t.rank(), " stream ", t.stream(),
               " runs boxing of period ", it->second,
               " (boxing of one stream acts in one cycle: give each period its own stream)");
  }
  (void)producer;
  return Status::OK();
}

int64_t ProcessOfRank(const proto::Plan& plan, int64_t rank) {
  return plan.process_of_rank().empty() ? 0 : plan.process_of_rank(static_cast<int>(rank));
}

Maybe<std::vector<int64_t>> CheckPlan(const proto::Plan& plan) {
  OFL_ENSURE(plan.num_ranks() >= 1, "plan: num_ranks is ", plan.num_ranks());
  OFL_ENSURE(plan.process_of_rank().empty() || plan.process_of_rank_size() == plan.num_ranks(),
             "plan: process_of_rank names ", plan.process_of_rank_size(), " ranks of ",
             plan.num_ranks());
  for (int64_t p : plan.process_of_rank()) {
    OFL_ENSURE(p >= 0, "plan: process_of_rank holds process ", p);
  }
  OFL_RETURN_IF_ERROR(CheckPlanShape(plan));
  // Data crosses processes only through communicators: a task touches the
  // registers of its own process.
  for (const auto& t : plan.tasks()) {
    const int64_t process = ProcessOfRank(plan, t.rank());
    for (const auto* ids : {&t.inputs(), &t.outputs(), &t.ctrl_inputs(), &t.ctrl_outputs()}) {
      for (int64_t id : *ids) {
        const int64_t rank = plan.registers(id).rank();
        OFL_ENSURE(ProcessOfRank(plan, rank) == process, "plan: task ", t.id(), " (",
                   TaskDisplayName(t), ") on rank ", t.rank(), " (process ", process,
                   ") uses register '", plan.registers(id).name(), "' of rank ", rank, " (process ",
                   ProcessOfRank(plan, rank), ")");
      }
    }
  }
  OFL_RETURN_IF_ERROR(CheckDevices(plan));
  std::vector<int64_t> producer(plan.registers_size(), -1);
  for (const auto& t : plan.tasks()) {
    for (const auto* ids : {&t.outputs(), &t.ctrl_outputs()}) {
      for (int64_t id : *ids) {
        OFL_ENSURE(producer[id] < 0, "plan: register '", plan.registers(id).name(),
                   "' is written by task ", producer[id], " and task ", t.id());
        producer[id] = t.id();
      }
    }
  }
  for (const auto& t : plan.tasks()) {
    for (int64_t id : ReadRegisters(t)) {
      OFL_ENSURE(producer[id] >= 0, "plan: task ", t.id(), " (", TaskDisplayName(t),
                 ") reads register '", plan.registers(id).name(), "' that no task writes");
    }
  }
  OFL_RETURN_IF_ERROR(CheckInPlaceOrder(plan, producer));
  OFL_RETURN_IF_ERROR(CheckActRatios(plan, producer));
  return producer;
}

namespace {
Maybe<Device> ParseDevice(const std::string& text, int64_t rank, const std::string& what) {
  if (text.empty()) return Device{DeviceType::kCPU, static_cast<int>(rank)};
  Maybe<Device> device = Device::Parse(text);
  if (!device.ok()) return InvalidArgument("plan: ", what, ": ", device.status().message());
  return device;
}
}  // namespace

Maybe<Device> DeviceOf(const proto::RegisterDesc& r) {
  return ParseDevice(r.device(), r.rank(), "register '" + r.name() + "'");
}

Maybe<Device> DeviceOf(const proto::TaskProto& t) {
  return ParseDevice(t.device(), t.rank(), StrCat("task ", t.id(), " (", TaskDisplayName(t), ")"));
}

Status CheckDevices(const proto::Plan& plan) {
  std::vector<Device> registers;
  for (const auto& r : plan.registers()) {
    OFL_ASSIGN_OR_RETURN(Device device, DeviceOf(r));
    registers.push_back(device);
  }
  std::map<int64_t, std::pair<Device, int64_t>> rank_device;  // rank -> (device, first task)
  for (const auto& t : plan.tasks()) {
    OFL_ASSIGN_OR_RETURN(Device device, DeviceOf(t));
    auto [first, inserted] = rank_device.emplace(t.rank(), std::make_pair(device, t.id()));
    OFL_ENSURE(inserted || first->second.first == device, "plan: task ", t.id(), " (",
               TaskDisplayName(t), ") of rank ", t.rank(), " is on ", device, ", task ",
               first->second.second, " (", TaskDisplayName(plan.tasks(first->second.second)),
               ") of that rank on ", first->second.first, " (a rank is one device)");
    for (const auto* ids : {&t.inputs(), &t.outputs(), &t.ctrl_inputs(), &t.ctrl_outputs()}) {
      for (int64_t id : *ids) {
        const bool shared_host = registers[id].is_host() && device.is_host();
        OFL_ENSURE(registers[id] == device || shared_host, "plan: task ", t.id(), " (",
                   TaskDisplayName(t), ") on ", device, " uses register '",
                   plan.registers(id).name(), "' (id ", id, ") on ", registers[id],
                   " (a task's registers are on its device; only CPU devices share memory)");
      }
    }
  }
  return Status::OK();
}

Status RunIterationsFit(const proto::Plan& plan, int64_t num_iterations) {
  int64_t largest = 1;
  for (const auto& t : plan.tasks()) largest = std::max(largest, Period(t.period()));
  for (const auto& r : plan.registers()) largest = std::max(largest, Period(r.period()));
  OFL_ENSURE(num_iterations % largest == 0, "run: ", num_iterations,
             " iterations is not a whole number of steps of ", largest,
             " micro-batches (the plan's largest period)");
  return Status::OK();
}

}  // namespace ofl
