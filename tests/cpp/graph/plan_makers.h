// Hand-built Plans for tests: float32 registers of given shapes and tasks
// that read and write them, as the lowering would emit them (ids in order).
// Used by the task pricing, cache residency and kernel timing tests.
// Header-only; each call appends to the caller's Plan (not thread-safe on
// one Plan).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "oneflow_lite/core/proto/plan.pb.h"

namespace ofl::testing {

// A float32 register of `dims` on `rank`, one slot; its id.
inline int64_t AddRegister(proto::Plan* plan, int64_t rank, const std::vector<int64_t>& dims) {
  proto::RegisterDesc* r = plan->add_registers();
  r->set_id(plan->registers_size() - 1);
  r->set_rank(rank);
  r->set_num_slots(1);
  int64_t n = 1;
  for (int64_t d : dims) {
    r->mutable_desc()->mutable_shape()->add_dims(d);
    n *= d;
  }
  r->mutable_desc()->set_dtype("float32");
  r->set_bytes(4 * n);
  return r->id();
}

inline proto::TaskProto* AddTask(proto::Plan* plan, proto::TaskProto::Kind kind, int64_t rank,
                                 const std::vector<int64_t>& in, const std::vector<int64_t>& out) {
  proto::TaskProto* t = plan->add_tasks();
  t->set_id(plan->tasks_size() - 1);
  t->set_kind(kind);
  t->set_rank(rank);
  for (int64_t r : in) t->add_inputs(r);
  for (int64_t r : out) t->add_outputs(r);
  return t;
}

// A COMPUTE task of op `type` named "<type><id>".
inline proto::TaskProto* AddCompute(proto::Plan* plan, const std::string& type, int64_t rank,
                                    const std::vector<int64_t>& in,
                                    const std::vector<int64_t>& out) {
  proto::TaskProto* t = AddTask(plan, proto::TaskProto::COMPUTE, rank, in, out);
  t->mutable_op_conf()->set_op_type(type);
  t->mutable_op_conf()->set_name(type + std::to_string(t->id()));
  return t;
}

}  // namespace ofl::testing
