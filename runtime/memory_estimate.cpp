// Memory estimate of a Plan (runtime/memory_estimate.h): the allocations of
// Runtime::Build (runtime.cpp: CreateDevices, CreateArenas, the register
// loop, StepUndo's constructor), in the same order of decisions: the
// arena with the undo copies it places, then the buffers of their own.
#include "runtime/memory_estimate.h"

#include <set>

#include "oneflow_lite/core/checked_math.h"
#include "oneflow_lite/core/data_type.h"
#include "runtime/memory_plan.h"
#include "runtime/plan_check.h"
#include "runtime/step_undo.h"

namespace ofl {

namespace {

// One slot's bytes of `r`, as Allocator::NewTensor counts them.
Maybe<int64_t> SlotBytes(const proto::RegisterDesc& r) {
  OFL_ASSIGN_OR_RETURN(DataType dtype, ParseDataType(r.desc().dtype()));
  int64_t n = 1;
  for (int64_t d : r.desc().shape().dims()) n = SaturatingMul(n, d);
  return SaturatingMul(n, SizeOf(dtype));
}

// Each rank's device is host memory: its tasks' device, else its
// registers', else cpu:<rank> (CreateDevices in runtime.cpp).
Maybe<std::vector<bool>> HostRanks(const proto::Plan& plan) {
  std::vector<Device> device(plan.num_ranks());
  for (int64_t r = 0; r < plan.num_ranks(); ++r) {
    device[r] = {DeviceType::kCPU, static_cast<int>(r)};
  }
  for (const auto& reg : plan.registers()) {
    OFL_ASSIGN_OR_RETURN(device[reg.rank()], DeviceOf(reg));
  }
  for (const auto& t : plan.tasks()) {
    OFL_ASSIGN_OR_RETURN(device[t.rank()], DeviceOf(t));
  }
  std::vector<bool> host(plan.num_ranks());
  for (int64_t r = 0; r < plan.num_ranks(); ++r) host[r] = device[r].is_host();
  return host;
}

}  // namespace

Maybe<std::vector<RankMemoryEstimate>> EstimatePlanMemory(const proto::Plan& plan,
                                                          const MemoryEstimateOptions& options) {
  OFL_ASSIGN_OR_RETURN(std::vector<int64_t> producer, CheckPlan(plan));
  OFL_ASSIGN_OR_RETURN(std::vector<bool> host, HostRanks(plan));
  std::vector<RankMemoryEstimate> out(plan.num_ranks());
  std::vector<std::vector<int64_t>> arena_offset(plan.num_ranks());
  std::vector<std::vector<int64_t>> undo_offset(plan.num_ranks());
  for (int64_t r = 0; r < plan.num_ranks(); ++r) {
    RankMemoryEstimate& e = out[r];
    e.rank = r;
    e.host = host[r];
    arena_offset[r].assign(plan.registers_size(), -1);
    undo_offset[r].assign(plan.registers_size(), -1);
    if (!options.plan_memory || !host[r]) continue;
    MemoryPlan p = PlanRegisterMemory(plan, r, producer, options.transactional);
    if (p.arena_bytes == 0) continue;
    // The undo copies' part is theirs; the spare slots' stays with their registers.
    e.arena_bytes = p.arena_bytes - p.undo_arena_bytes - p.spare_slot_bytes;
    e.planned_bytes = p.unshared_bytes;
    e.spare_slot_bytes = p.spare_slot_bytes;
    e.undo_bytes = p.undo_arena_bytes;
    e.undo_in_arena_bytes = p.undo_arena_bytes;
    arena_offset[r] = std::move(p.offset);
    undo_offset[r] = std::move(p.undo_offset);
  }
  for (const auto& reg : plan.registers()) {
    if (arena_offset[reg.rank()][reg.id()] >= 0) continue;
    OFL_ASSIGN_OR_RETURN(int64_t slot, SlotBytes(reg));
    const int64_t bytes = SaturatingMul(slot, reg.num_slots());
    RankMemoryEstimate& e = out[reg.rank()];
    e.own.push_back({reg.id(), bytes});
    e.own_bytes = SaturatingAdd(e.own_bytes, bytes);
  }
  if (options.transactional) {
    for (int64_t id : StepUndo::UpdatedRegisters(plan)) {
      const proto::RegisterDesc& reg = plan.registers(id);
      if (undo_offset[reg.rank()][id] >= 0) continue;  // in the arena: counted above
      OFL_ASSIGN_OR_RETURN(int64_t slot, SlotBytes(reg));
      RankMemoryEstimate& e = out[reg.rank()];
      e.undo_bytes = SaturatingAdd(e.undo_bytes, slot);
    }
  }
  return out;
}

}  // namespace ofl
