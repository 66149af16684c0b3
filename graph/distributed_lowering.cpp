#include "graph/distributed_lowering.h"

#include <algorithm>
#include <map>
#include <set>

#include "graph/boxing.h"
#include "graph/boxing_tasks.h"
#include "graph/plan_builder.h"
#include "oneflow_lite/core/slicing.h"

namespace ofl {

namespace {

constexpr int64_t kComputeStream = 0;

// Per rank index of its placement: the register holding a tensor's slice.
struct Layout {
  std::string tensor;  // the logical tensor (its desc)
  Placement placement;
  NdSbp sbp;
  int64_t period = 1;  // iterations per value
  std::vector<int64_t> registers;
};

bool HasMutableInput(const OpNode& node) {
  const OpDef* def = OpRegistry::Find(node.type).value();
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    if (def->is_mutable_input(static_cast<int>(i))) return true;
  }
  return false;
}

class Lowerer {
 public:
  Lowerer(const OpGraph& graph, const Strategy& strategy, const LoweringOptions& options)
      : graph_(graph), strategy_(strategy), options_(options), builder_(strategy.num_ranks()) {}

  Maybe<proto::Plan> Run(const std::vector<std::string>& fetches) {
    OFL_RETURN_IF_ERROR(strategy_.Validate(graph_));
    OFL_ENSURE(options_.micro_batches >= 1, "lowering: micro_batches is ", options_.micro_batches);
    for (const std::string& f : fetches) {
      OFL_ENSURE(graph_.HasTensor(f), "fetch: unknown tensor '", f, "'");
    }
    SetDeviceTypes();
    for (const std::string& name : graph_.input_names()) AddSource(name, proto::TaskProto::SOURCE);
    for (const std::string& name : graph_.variable_names()) {
      AddSource(name, proto::TaskProto::VARIABLE);
    }
    bool bucketed = false;
    for (const OpNode& node : graph_.ops()) {
      if (!bucketed && HasMutableInput(node)) {  // every gradient exists by now
        OFL_RETURN_IF_ERROR(BucketGradients());
        bucketed = true;
      }
      OFL_RETURN_IF_ERROR(AddOp(node));
    }
    for (const std::string& f : fetches) AddSink(f);
    builder_.AddInPlaceCtrlEdges();
    return builder_.Release();
  }

 private:
  int64_t StepPeriod() const { return options_.micro_batches; }

  // Each rank's registers and tasks are on a device of its placements' type.
  void SetDeviceTypes() {
    auto set = [&](const Placement& p) {
      for (int64_t r : p.ranks()) builder_.set_device_type(r, p.device_type());
    };
    for (const std::string& name : graph_.input_names()) set(strategy_.SourcePlacement(name));
    for (const std::string& name : graph_.variable_names()) set(strategy_.SourcePlacement(name));
    for (const OpNode& node : graph_.ops()) set(strategy_.PlacementOf(node.name));
  }
  static void SetPeriod(proto::TaskProto* task, int64_t period) {
    if (period > 1) task->set_period(period);
  }

  // A register for the slice of `tensor` laid out as `sbp` on rank `index` of `p`.
  int64_t AddSliceRegister(const std::string& tensor, const Placement& p, const NdSbp& sbp,
                           size_t index, int64_t slots, bool persistent, int64_t period) {
    const TensorDesc logical = graph_.Desc(tensor).value();
    TensorSlice slice =
        SliceOf(logical.shape, p.hierarchy(), sbp, p.Coordinates(static_cast<int64_t>(index)));
    int64_t id = builder_.AddRegister(tensor, p.ranks()[index], {slice.shape, logical.dtype}, slots,
                                      persistent);
    proto::RegisterDesc* r = builder_.mutable_register(id);
    for (int64_t d : logical.shape.dims()) r->mutable_logical_shape()->add_dims(d);
    for (int64_t o : slice.offset) r->add_logical_offset(o);
    r->set_nd_sbp(sbp.ToString());
    if (period > 1) r->set_period(period);
    return id;
  }

  void AddSource(const std::string& name, proto::TaskProto::Kind kind) {
    const bool variable = kind == proto::TaskProto::VARIABLE;
    const int64_t period = variable ? StepPeriod() : 1;
    Layout layout{name, strategy_.SourcePlacement(name), strategy_.sources().at(name), period, {}};
    for (size_t i = 0; i < layout.placement.ranks().size(); ++i) {
      int64_t reg = AddSliceRegister(name, layout.placement, layout.sbp, i,
                                     variable ? 1 : options_.num_slots, variable, period);
      proto::TaskProto* task =
          builder_.AddTask(kind, layout.placement.ranks()[i], kComputeStream, {}, {reg});
      task->mutable_op_conf()->set_name(name);
      SetPeriod(task, period);
      layout.registers.push_back(reg);
    }
    layouts_[name] = layout;
  }

  // The registers holding layouts_[key] as `want` on `to`, boxing once per
  // (key, placement, want). Step-rate boxing runs on its own stream.
  Maybe<std::vector<int64_t>> RegistersAs(const std::string& key, const Placement& to,
                                          const NdSbp& want) {
    const Layout& have = layouts_.at(key);
    if (have.sbp == want && have.placement == to) return have.registers;
    auto cache_key = std::make_pair(key, to.ToString() + " " + want.ToString());
    auto cached = boxed_.find(cache_key);
    if (cached != boxed_.end()) return cached->second;
    OFL_ASSIGN_OR_RETURN(TensorDesc desc, graph_.Desc(have.tensor));
    OFL_ASSIGN_OR_RETURN(BoxingPlan plan,
                         PlanBoxing(desc, have.placement, have.sbp, to, want, have.tensor));
    const int first_task = builder_.plan().tasks_size();
    const int64_t slots =
        have.placement == to ? options_.num_slots : std::max<int64_t>(2, options_.num_slots);
    std::vector<int64_t> regs = EmitBoxing(plan, have.tensor, have.registers, &builder_, slots);
    if (have.period > 1) {
      for (int t = first_task; t < builder_.plan().tasks_size(); ++t) {
        proto::TaskProto* task = builder_.mutable_task(t);
        SetPeriod(task, have.period);
        task->set_stream(kStepBoxingStream);
        for (int64_t r : task->outputs()) builder_.mutable_register(r)->set_period(have.period);
      }
    }
    boxed_[cache_key] = regs;
    return regs;
  }

  // Step-rate boxing tasks (from `first_task` on) act once per step, on their own stream.
  void SetStepRate(int first_task, int64_t period) {
    if (period <= 1) return;
    for (int t = first_task; t < builder_.plan().tasks_size(); ++t) {
      proto::TaskProto* task = builder_.mutable_task(t);
      SetPeriod(task, period);
      if (task->kind() == proto::TaskProto::BOXING) task->set_stream(kStepBoxingStream);
      for (int64_t r : task->outputs()) builder_.mutable_register(r)->set_period(period);
    }
  }

  // A COMPUTE task of op `type` on `rank` from register `in` into a new
  // register of `desc`; returns that register.
  int64_t AddLocalOp(const std::string& name, const std::string& type, const AttrMap& attrs,
                     int64_t rank, const std::vector<int64_t>& in, const TensorDesc& desc) {
    const int64_t out = builder_.AddRegister(name, rank, desc, options_.num_slots);
    proto::OpConf* conf =
        builder_.AddTask(proto::TaskProto::COMPUTE, rank, kComputeStream, in, {out})
            ->mutable_op_conf();
    conf->set_name(name);
    conf->set_op_type(type);
    for (const auto& [k, v] : attrs.values()) (*conf->mutable_attrs())[k] = AttrToProto(v);
    for (size_t j = 0; j < in.size(); ++j) conf->add_inputs(name + "/in" + std::to_string(j));
    conf->add_outputs(name);
    return out;
  }

  // A gradient an update reads that only needs its P axes summed (every
  // axis P or B, wanted B everywhere) on the update's placement.
  struct Fusable {
    std::string key;  // its (accumulated) layout
    NdSbp want;
    std::string group;  // placement, NdSbps, dtype, period: who may share a bucket
  };

  std::vector<std::pair<int, Fusable>> FusableGradients() {
    std::map<std::string, int> producer_index;
    for (size_t k = 0; k < graph_.ops().size(); ++k) {
      for (const std::string& o : graph_.ops()[k].outputs) producer_index[o] = static_cast<int>(k);
    }
    std::vector<std::pair<int, Fusable>> out;
    std::set<std::string> seen;
    for (const OpNode& node : graph_.ops()) {
      if (!HasMutableInput(node)) continue;
      const OpDef* def = OpRegistry::Find(node.type).value();
      const NdSbpSignature& sig = strategy_.signature(node.name);
      const Placement& placement = strategy_.PlacementOf(node.name);
      for (size_t i = 0; i < node.inputs.size(); ++i) {
        auto producer = producer_index.find(node.inputs[i]);
        if (def->is_mutable_input(static_cast<int>(i)) || producer == producer_index.end() ||
            layouts_.count(node.inputs[i]) == 0) {
          continue;
        }
        const Layout& have = layouts_.at(node.inputs[i]);
        const TensorDesc desc = graph_.Desc(have.tensor).value();
        bool partial = false, fusable = have.placement == placement && IsFloating(desc.dtype);
        for (int64_t a = 0; a < have.sbp.size() && fusable; ++a) {
          partial = partial || have.sbp[a].is_partial_sum();
          fusable = !have.sbp[a].is_split() && sig.inputs[i][a].is_broadcast();
        }
        const std::string group = placement.ToString() + have.sbp.ToString() +
                                  sig.inputs[i].ToString() + DataTypeName(desc.dtype);
        if (!fusable || !partial || !seen.insert(node.inputs[i] + group).second) continue;
        out.push_back({producer->second, {node.inputs[i], sig.inputs[i], group}});
      }
    }
    std::stable_sort(out.begin(), out.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    return out;
  }

  // Fuses the gradients' all-reduces into buckets of at most
  // options_.gradient_bucket_bytes, in order of readiness (graph order of
  // their producers); see distributed_lowering.h.
  Status BucketGradients() {
    if (options_.gradient_bucket_bytes <= 0) return Status::OK();
    std::map<std::string, std::vector<Fusable>> open;  // group -> members
    std::map<std::string, int64_t> open_bytes;
    int buckets = 0;
    auto close = [&](const std::string& group) -> Status {
      std::vector<Fusable> members = std::move(open[group]);
      open.erase(group);
      open_bytes.erase(group);
      if (members.size() >= 2) return EmitBucket(members, "bucket" + std::to_string(buckets++));
      return Status::OK();
    };
    for (auto& [index, f] : FusableGradients()) {
      std::string key = f.key;
      if (layouts_.at(key).period < StepPeriod()) key = Accumulated(key);
      f.key = key;
      const TensorDesc desc = graph_.Desc(layouts_.at(key).tensor).value();
      open[f.group].push_back(f);
      open_bytes[f.group] += desc.shape.NumElements() * SizeOf(desc.dtype);
      if (open_bytes[f.group] >= options_.gradient_bucket_bytes) {
        OFL_RETURN_IF_ERROR(close(f.group));
      }
    }
    while (!open.empty()) OFL_RETURN_IF_ERROR(close(open.begin()->first));
    return Status::OK();
  }

  // One bucket: per rank, each member flattened and concatenated into one
  // [N] register, one boxing of that (the all-reduce), then each member
  // sliced back out in its shape; consumers of a member's boxing get those.
  Status EmitBucket(const std::vector<Fusable>& members, const std::string& name) {
    const Layout& first = layouts_.at(members[0].key);
    const Placement& placement = first.placement;
    const int64_t period = first.period;
    const DataType dtype = graph_.Desc(first.tensor).value().dtype;
    std::vector<int64_t> sizes;
    int64_t total = 0;
    for (const Fusable& m : members) {
      sizes.push_back(graph_.Desc(layouts_.at(m.key).tensor).value().shape.NumElements());
      total += sizes.back();
    }
    const int first_task = builder_.plan().tasks_size();
    std::vector<int64_t> fused;
    for (size_t i = 0; i < placement.ranks().size(); ++i) {
      const int64_t rank = placement.ranks()[i];
      std::vector<int64_t> flat;
      for (size_t j = 0; j < members.size(); ++j) {
        flat.push_back(AddLocalOp(name + "/flatten" + std::to_string(j), "reshape",
                                  AttrMap({{"shape", std::vector<int64_t>{sizes[j]}}}), rank,
                                  {layouts_.at(members[j].key).registers[i]},
                                  {Shape{sizes[j]}, dtype}));
      }
      const int64_t reg = AddLocalOp(name + "/concat", "concat",
                                     AttrMap({{"axis", int64_t{0}}}), rank, flat,
                                     {Shape{total}, dtype});
      proto::RegisterDesc* r = builder_.mutable_register(reg);
      r->mutable_logical_shape()->add_dims(total);
      r->add_logical_offset(0);
      r->set_nd_sbp(first.sbp.ToString());
      fused.push_back(reg);
    }
    SetStepRate(first_task, period);
    OFL_ASSIGN_OR_RETURN(BoxingPlan plan, PlanBoxing({Shape{total}, dtype}, placement, first.sbp,
                                                     placement, members[0].want, name));
    const int boxing_task = builder_.plan().tasks_size();
    std::vector<int64_t> reduced = EmitBoxing(plan, name, fused, &builder_, options_.num_slots);
    SetStepRate(boxing_task, period);
    const int split_task = builder_.plan().tasks_size();
    int64_t offset = 0;
    for (size_t j = 0; j < members.size(); ++j) {
      const Layout& member = layouts_.at(members[j].key);
      std::vector<int64_t> regs;
      for (size_t i = 0; i < placement.ranks().size(); ++i) {
        const int64_t rank = placement.ranks()[i];
        const std::string part = name + "/" + member.tensor;
        const int64_t sliced = AddLocalOp(
            part + "/slice", "slice",
            AttrMap({{"start", std::vector<int64_t>{offset}},
                     {"stop", std::vector<int64_t>{offset + sizes[j]}},
                     {"step", std::vector<int64_t>{1}}}),
            rank, {reduced[i]}, {Shape{sizes[j]}, dtype});
        const TensorDesc desc = graph_.Desc(member.tensor).value();
        const int64_t out = AddLocalOp(part + "/reshape", "reshape",
                                       AttrMap({{"shape", desc.shape.dims()}}), rank, {sliced},
                                       desc);
        proto::RegisterDesc* r = builder_.mutable_register(out);
        for (int64_t d : desc.shape.dims()) r->mutable_logical_shape()->add_dims(d);
        for (int64_t d = 0; d < desc.shape.ndim(); ++d) r->add_logical_offset(0);
        r->set_nd_sbp(members[j].want.ToString());
        regs.push_back(out);
      }
      offset += sizes[j];
      boxed_[{members[j].key, placement.ToString() + " " + members[j].want.ToString()}] = regs;
    }
    SetStepRate(split_task, period);
    return Status::OK();
  }

  // The mean over a step's micro-batches of a micro-rate tensor: one ACC
  // task per rank of its layout; returns the key of the accumulated layout.
  std::string Accumulated(const std::string& key) {
    const std::string acc = "acc/" + key;
    if (layouts_.count(acc) > 0) return acc;
    Layout layout = layouts_.at(key);
    layout.period = StepPeriod();
    for (size_t i = 0; i < layout.placement.ranks().size(); ++i) {
      const int64_t in = layout.registers[i];
      int64_t out =
          AddSliceRegister(layout.tensor, layout.placement, layout.sbp, i, 1, false, layout.period);
      builder_
          .AddTask(proto::TaskProto::ACC, layout.placement.ranks()[i], kComputeStream, {in}, {out})
          ->mutable_op_conf()
          ->set_name(acc);
      layout.registers[i] = out;
    }
    layouts_[acc] = layout;
    return acc;
  }

  Status AddOp(const OpNode& node) {
    const NdSbpSignature& sig = strategy_.signature(node.name);
    const Placement& placement = strategy_.PlacementOf(node.name);
    const int64_t period = HasMutableInput(node) ? StepPeriod() : 1;
    std::vector<std::vector<int64_t>> inputs;
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      std::string key = node.inputs[i];
      if (layouts_.at(key).period < period) key = Accumulated(key);  // a gradient: its mean
      OFL_ASSIGN_OR_RETURN(std::vector<int64_t> regs, RegistersAs(key, placement, sig.inputs[i]));
      inputs.push_back(regs);
    }
    std::vector<Layout> outputs(node.outputs.size());
    for (size_t o = 0; o < node.outputs.size(); ++o) {
      outputs[o] = Layout{node.outputs[o], placement, sig.outputs[o], period, {}};
    }
    for (size_t i = 0; i < placement.ranks().size(); ++i) {
      std::vector<int64_t> in_regs, out_regs;
      for (const auto& regs : inputs) in_regs.push_back(regs[i]);
      for (size_t o = 0; o < node.outputs.size(); ++o) {
        int64_t reg = AddSliceRegister(node.outputs[o], placement, sig.outputs[o], i,
                                       options_.num_slots, false, period);
        out_regs.push_back(reg);
        outputs[o].registers.push_back(reg);
      }
      proto::TaskProto* task = builder_.AddTask(proto::TaskProto::COMPUTE, placement.ranks()[i],
                                                kComputeStream, in_regs, out_regs);
      SetPeriod(task, period);
      proto::OpConf* conf = task->mutable_op_conf();
      conf->set_name(node.name);
      conf->set_op_type(node.type);
      for (const auto& [k, v] : node.attrs.values()) (*conf->mutable_attrs())[k] = AttrToProto(v);
      for (const std::string& in : node.inputs) conf->add_inputs(in);
      for (const std::string& out : node.outputs) conf->add_outputs(out);
    }
    for (size_t o = 0; o < node.outputs.size(); ++o) layouts_[node.outputs[o]] = outputs[o];
    return Status::OK();
  }

  void AddSink(const std::string& tensor) {
    const Layout& layout = layouts_.at(tensor);
    for (size_t i = 0; i < layout.placement.ranks().size(); ++i) {
      proto::TaskProto* task = builder_.AddTask(proto::TaskProto::SINK, layout.placement.ranks()[i],
                                                kComputeStream, {layout.registers[i]}, {});
      task->mutable_op_conf()->set_name(tensor);
      SetPeriod(task, layout.period);
    }
  }

  const OpGraph& graph_;
  const Strategy& strategy_;
  LoweringOptions options_;
  PlanBuilder builder_;
  std::map<std::string, Layout> layouts_;
  std::map<std::pair<std::string, std::string>, std::vector<int64_t>> boxed_;
};

}  // namespace

Maybe<proto::Plan> LowerDistributed(const OpGraph& graph, const Strategy& strategy,
                                    const std::vector<std::string>& fetches,
                                    const LoweringOptions& options) {
  Lowerer lowerer(graph, strategy, options);
  return lowerer.Run(fetches);
}

}  // namespace ofl
