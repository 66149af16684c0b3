#include "graph/boxing_tasks.h"

#include <map>
#include <set>

#include "oneflow_lite/core/slicing.h"

namespace ofl {

namespace {

using Conf = proto::BoxingConf;

bool NeedsCommunicator(Conf::Kind kind) {
  return kind == Conf::ALL_REDUCE || kind == Conf::REDUCE_SCATTER || kind == Conf::ALL_GATHER ||
         kind == Conf::ALL_TO_ALL || kind == Conf::SEND_RECV;
}

// BoxingConf::split_axis: the source's S axis for gathers, all-to-all and
// local scatter, the target's for reduce-scatter and local slice.
int64_t SplitAxisOf(const BoxingStep& step) {
  if (step.hierarchy_axis < 0) return -1;
  const Sbp& x = step.from[step.hierarchy_axis];
  const Sbp& y = step.to[step.hierarchy_axis];
  switch (step.kind) {
    case Conf::ALL_GATHER:
    case Conf::ALL_TO_ALL:
    case Conf::SCATTER_LOCAL:
      return x.axis();
    case Conf::REDUCE_SCATTER:
    case Conf::LOCAL_SLICE:
      return y.axis();
    default:
      return -1;
  }
}

void FillCommon(const BoxingStep& step, const Shape& logical, Conf* conf) {
  conf->set_kind(step.kind);
  conf->set_hierarchy_axis(step.hierarchy_axis);
  conf->set_split_axis(SplitAxisOf(step));
  conf->set_to_split_axis(step.kind == Conf::ALL_TO_ALL ? step.to[step.hierarchy_axis].axis() : -1);
  for (int64_t d : logical.dims()) conf->mutable_logical_shape()->add_dims(d);
  conf->set_from_nd_sbp(step.from.ToString());
  conf->set_to_nd_sbp(step.to.ToString());
}

// The register's slice in the logical tensor (kernels of a split input read it).
void SetLogicalPlace(const Shape& logical, const TensorSlice& slice, proto::RegisterDesc* r) {
  for (int64_t d : logical.dims()) r->mutable_logical_shape()->add_dims(d);
  for (int64_t o : slice.offset) r->add_logical_offset(o);
}

int64_t IndexOfCoordinates(const Shape& hierarchy, const std::vector<int64_t>& coords) {
  int64_t index = 0;
  for (int64_t a = 0; a < hierarchy.ndim(); ++a) index = index * hierarchy[a] + coords[a];
  return index;
}

std::string RegisterName(const std::string& name, size_t step) {
  return name + "/boxing" + std::to_string(step);
}

// A step on the groups of one hierarchy axis: every rank takes part.
std::vector<int64_t> EmitAxisStep(const BoxingStep& step, size_t step_index,
                                  const TensorDesc& logical, const std::string& name,
                                  const std::vector<int64_t>& current, int64_t num_slots,
                                  PlanBuilder* builder) {
  const Placement& placement = step.from_placement;
  const Shape& hierarchy = placement.hierarchy();
  const int64_t axis = step.hierarchy_axis;
  std::map<int64_t, int64_t> group_ids;  // index of the group's first member -> id
  std::vector<int64_t> next(placement.size());
  for (int64_t i = 0; i < placement.size(); ++i) {
    const int64_t rank = placement.ranks()[i];
    std::vector<int64_t> coords = placement.Coordinates(i);
    TensorSlice before = SliceOf(logical.shape, hierarchy, step.from, coords);
    TensorSlice after = SliceOf(logical.shape, hierarchy, step.to, coords);
    next[i] = builder->AddRegister(RegisterName(name, step_index), rank,
                                   TensorDesc{after.shape, logical.dtype}, num_slots);
    SetLogicalPlace(logical.shape, after, builder->mutable_register(next[i]));
    proto::TaskProto* task =
        builder->AddTask(proto::TaskProto::BOXING, rank, kBoxingStream, {current[i]}, {next[i]});
    task->mutable_op_conf()->set_name(name);  // errors and traces name the boxed tensor
    Conf* conf = task->mutable_boxing_conf();
    FillCommon(step, logical.shape, conf);
    std::vector<int64_t> member = coords;
    for (int64_t k = 0; k < hierarchy[axis]; ++k) {
      member[axis] = k;
      conf->add_group(placement.ranks()[IndexOfCoordinates(hierarchy, member)]);
    }
    int64_t group_id = -1;
    if (NeedsCommunicator(step.kind)) {
      member[axis] = 0;
      const int64_t key = IndexOfCoordinates(hierarchy, member);
      auto it = group_ids.find(key);
      if (it == group_ids.end()) it = group_ids.emplace(key, builder->NewGroupId()).first;
      group_id = it->second;
    }
    conf->set_group_id(group_id);
    for (int64_t v : before.offset) conf->add_in_offset(v);
    for (int64_t v : after.offset) conf->add_out_offset(v);
  }
  return next;
}

void AddTransfer(int64_t peer, const BoxTransfer& t,
                 google::protobuf::RepeatedPtrField<proto::Transfer>* out) {
  proto::Transfer* p = out->Add();
  p->set_peer(peer);
  for (int64_t v : t.offset) p->add_offset(v);
  for (int64_t v : t.shape.dims()) p->add_shape(v);
}

// The general step: one group of every rank of both placements.
std::vector<int64_t> EmitSendRecv(const BoxingStep& step, size_t step_index,
                                  const TensorDesc& logical, const std::string& name,
                                  const std::vector<int64_t>& current, int64_t num_slots,
                                  PlanBuilder* builder) {
  const Placement& sp = step.from_placement;
  const Placement& tp = step.to_placement;
  std::set<int64_t> members(sp.ranks().begin(), sp.ranks().end());
  members.insert(tp.ranks().begin(), tp.ranks().end());
  const int64_t group_id = builder->NewGroupId();
  std::vector<int64_t> next(tp.size(), -1);
  for (int64_t rank : members) {
    const int64_t si = sp.IndexOf(rank), ti = tp.IndexOf(rank);
    std::vector<int64_t> inputs, outputs;
    if (si >= 0) inputs.push_back(current[si]);
    TensorSlice out_slice;
    if (ti >= 0) {
      out_slice = SliceOf(logical.shape, tp.hierarchy(), step.to, tp.Coordinates(ti));
      next[ti] = builder->AddRegister(RegisterName(name, step_index), rank,
                                      TensorDesc{out_slice.shape, logical.dtype}, num_slots);
      SetLogicalPlace(logical.shape, out_slice, builder->mutable_register(next[ti]));
      outputs.push_back(next[ti]);
    }
    proto::TaskProto* task =
        builder->AddTask(proto::TaskProto::BOXING, rank, kBoxingStream, inputs, outputs);
    task->mutable_op_conf()->set_name(name);
    Conf* conf = task->mutable_boxing_conf();
    FillCommon(step, logical.shape, conf);
    conf->set_group_id(group_id);
    for (int64_t m : members) conf->add_group(m);
    if (si >= 0) {
      TensorSlice in_slice = SliceOf(logical.shape, sp.hierarchy(), step.from, sp.Coordinates(si));
      for (int64_t v : in_slice.offset) conf->add_in_offset(v);
    }
    for (int64_t v : out_slice.offset) conf->add_out_offset(v);
    for (const BoxTransfer& t : step.transfers) {
      if (t.sender == rank && t.receiver != rank) AddTransfer(t.receiver, t, conf->mutable_sends());
      if (t.receiver == rank) AddTransfer(t.sender, t, conf->mutable_recvs());
    }
  }
  return next;
}

}  // namespace

std::vector<int64_t> EmitBoxing(const BoxingPlan& plan, const std::string& name,
                                const std::vector<int64_t>& input_registers, PlanBuilder* builder,
                                int64_t num_slots) {
  CHECK_EQ(static_cast<int64_t>(input_registers.size()), plan.from_placement.size())
      << "boxing of '" << name << "': one input register per source rank";
  for (size_t i = 0; i < input_registers.size(); ++i) {
    const int64_t id = input_registers[i];
    CHECK(id >= 0 && id < builder->plan().registers_size()) << "register " << id;
    CHECK_EQ(builder->plan().registers(id).rank(), plan.from_placement.ranks()[i])
        << "boxing of '" << name << "': register " << id << " is on another rank";
  }
  std::vector<int64_t> current = input_registers;
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    const BoxingStep& step = plan.steps[s];
    current = step.kind == Conf::SEND_RECV
                  ? EmitSendRecv(step, s, plan.logical, name, current, num_slots, builder)
                  : EmitAxisStep(step, s, plan.logical, name, current, num_slots, builder);
  }
  return current;
}

}  // namespace ofl
