// Emits a BoxingPlan (graph/boxing.h) into a Plan: one BOXING task per rank
// and step, on stream kBoxingStream, with its BoxingConf filled in, and one
// register per rank and step for the slice it holds afterwards (physical
// shape from core/slicing.h). The members of one collective instance share
// a group_id from PlanBuilder::NewGroupId(); local steps have group_id -1.
// Within one rank the tasks are appended in step order, which is the order
// it must run them in. Writes through the caller's builder; not synchronised.
#pragma once

#include <string>
#include <vector>

#include "graph/boxing.h"
#include "graph/plan_builder.h"

namespace ofl {

constexpr int64_t kBoxingStream = 1;  // compute runs on stream 0

// `input_registers[i]` holds the input slice of rank from_placement.ranks()[i];
// returns, for each i, the register holding the output slice of rank
// to_placement.ranks()[i] (the inputs themselves when the plan has no steps).
// New registers are named "<name>/boxing<step>" and have `num_slots` slots.
std::vector<int64_t> EmitBoxing(const BoxingPlan& plan, const std::string& name,
                                const std::vector<int64_t>& input_registers, PlanBuilder* builder,
                                int64_t num_slots = 1);

}  // namespace ofl
