// PlanBuilder: appends registers and tasks to a proto::Plan with dense ids.
// The lowering (graph/distributed_lowering.cpp) and the boxing planner's
// task emission (graph/boxing*.cpp) both build through it. Every register and
// task gets its rank's device (RegisterDesc.device, TaskProto.device):
// "<type>:<rank>", the type cpu unless set_device_type gave the rank another.
// Not synchronised.
#pragma once

#include <string>
#include <vector>

#include "oneflow_lite/core/device.h"
#include "oneflow_lite/core/proto/plan.pb.h"
#include "ops/op_registry.h"

namespace ofl {

class PlanBuilder {
 public:
  explicit PlanBuilder(int64_t num_ranks) : device_types_(num_ranks, DeviceType::kCPU) {
    plan_.set_num_ranks(num_ranks);
  }

  // The device type of `rank` for the registers and tasks added afterwards.
  void set_device_type(int64_t rank, DeviceType type) { device_types_.at(rank) = type; }
  // "cpu:3": the device of rank 3.
  std::string DeviceOf(int64_t rank) const;

  // A register of `num_slots` buffers of `desc` on `rank`; returns its id.
  int64_t AddRegister(const std::string& name, int64_t rank, const TensorDesc& desc,
                      int64_t num_slots = 1, bool persistent = false);
  // A data-less register for ctrl edges; returns its id.
  int64_t AddCtrlRegister(const std::string& name, int64_t rank);
  proto::TaskProto* AddTask(proto::TaskProto::Kind kind, int64_t rank, int64_t stream,
                            const std::vector<int64_t>& inputs,
                            const std::vector<int64_t>& outputs);
  // Orders every in-place update after the other readers of the register it
  // writes (an OpDef mutable input, e.g. sgd_update's param): a ctrl register
  // from each such reader to the update, of the update's period (a
  // micro-rate reader signals after its last micro-batch of the step,
  // runtime/actor.h). The runtime refuses a plan without them
  // (runtime/plan_check.h CheckInPlaceOrder). Call once, after every task.
  void AddInPlaceCtrlEdges();
  // A fresh id for a collective instance (BoxingConf::group_id).
  int64_t NewGroupId() { return next_group_id_++; }

  proto::RegisterDesc* mutable_register(int64_t id) { return plan_.mutable_registers(id); }
  proto::TaskProto* mutable_task(int64_t id) { return plan_.mutable_tasks(id); }
  const proto::Plan& plan() const { return plan_; }
  proto::Plan Release() { return std::move(plan_); }

 private:
  proto::Plan plan_;
  std::vector<DeviceType> device_types_;  // per rank
  int64_t next_group_id_ = 0;
};

}  // namespace ofl
