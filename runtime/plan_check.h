// Checks of a Plan before the Runtime builds actors for it: ids, ranks and
// slots (CheckPlanShape), and that every in-place update is ordered against the
// other readers of the register it writes (CheckInPlaceOrder). The lowering is
// meant to add those ctrl edges; without one the actors would let a reader see
// a half-updated variable, so the plan is refused instead. CheckActRatios holds
// the periods of micro-batching together; CheckDevices the devices of tasks and
// registers.
//
// Pure functions of the plan; thread-safe.
#pragma once

#include <cstdint>
#include <vector>

#include "oneflow_lite/core/device.h"
#include "oneflow_lite/core/proto/plan.pb.h"
#include "oneflow_lite/core/status.h"

// CheckPlan runs all of them in the order Runtime::Create does, so a loaded or
// received Plan can be refused before any actor or buffer exists
// (fuzz/fuzz_plan.cpp drives it with arbitrary plans).

namespace ofl {

// Dense register and task ids, ranks in range, num_slots >= 1 (1 when
// persistent), register ids in range.
Status CheckPlanShape(const proto::Plan& plan);

// For every COMPUTE task that writes one of its inputs in place (an OpDef
// mutable input), every other task reading that register must be an
// ancestor or a descendant of it through data and ctrl edges of one
// iteration. `producer[register id]` is the task writing it.
Status CheckInPlaceOrder(const proto::Plan& plan, const std::vector<int64_t>& producer);

// Periods (TaskProto.period, RegisterDesc.period; 0 means 1): a register's
// period is a multiple of its producer's and of each consumer's (a consumer
// never needs several values per act); persistent registers have their
// producer's period; the BOXING tasks of one (rank, stream) share a period
// (they act in one cyclic order). Run's iteration count must be a multiple
// of the largest period (RunIterationsFit).
Status CheckActRatios(const proto::Plan& plan, const std::vector<int64_t>& producer);
// The device of a register or task: its `device` field, or "cpu:<rank>"
// when that is empty; an error names the register or task and the text.
Maybe<Device> DeviceOf(const proto::RegisterDesc& r);
Maybe<Device> DeviceOf(const proto::TaskProto& t);

// Every device parses; the tasks of one rank share one device (a rank is
// one device); every register a task reads or writes (data and ctrl) is on
// the task's device, or the error names the task, the register and both
// devices. CPU devices are virtual and share the host's memory, so a CPU
// task may use a register of another CPU device of its process.
Status CheckDevices(const proto::Plan& plan);

// Everything Runtime::Create checks before it builds actors: num_ranks >= 1,
// CheckPlanShape, every register written by one task at most and read only
// when some task writes it, CheckDevices, then CheckInPlaceOrder and
// CheckActRatios.
// Returns producer[register id] (-1: no writer).
Maybe<std::vector<int64_t>> CheckPlan(const proto::Plan& plan);

// The process that owns `rank` (Plan.process_of_rank; 0 when it is empty).
int64_t ProcessOfRank(const proto::Plan& plan, int64_t rank);

Status RunIterationsFit(const proto::Plan& plan, int64_t num_iterations);

}  // namespace ofl
