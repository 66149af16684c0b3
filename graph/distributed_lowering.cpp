#include "graph/distributed_lowering.h"

#include <algorithm>
#include <map>
#include <set>

#include "graph/boxing.h"
#include "graph/boxing_tasks.h"
#include "graph/gradient_buckets.h"
#include "graph/matmul_bias_fusion.h"
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
    const MatmulBiasFusion fusion = Fusion();
    for (size_t i = 0; i < graph_.ops().size(); ++i) {
      const OpNode& node = graph_.ops()[i];
      if (!bucketed && HasMutableInput(node)) {  // every gradient exists by now
        OFL_RETURN_IF_ERROR(BucketGradients());
        bucketed = true;
      }
      if (fusion.folded[i]) continue;  // runs inside its bias_add's matmul_bias task
      if (fusion.absorbs[i] < 0) {
        OFL_RETURN_IF_ERROR(AddOp(node, strategy_.signature(node.name)));
        continue;
      }
      const OpNode fused = fusion.FusedNode(graph_, static_cast<int64_t>(i));
      const NdSbpSignature& mm = strategy_.signature(fused.name);
      NdSbpSignature sig = strategy_.signature(node.name);
      sig.inputs = {mm.inputs[0], mm.inputs[1], sig.inputs[1]};
      OFL_RETURN_IF_ERROR(AddOp(fused, sig, node.name));
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
    SetStepRate(first_task, have.period);
    boxed_[cache_key] = regs;
    return regs;
  }

  // Tasks from `first_task` on act once per step (period > 1), boxing on
  // its own stream (one stream's boxing acts in one cycle).
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

  // Fuses gradients' all-reduces and reduce-scatters into buckets
  // (gradient_buckets.h); see distributed_lowering.h.
  Status BucketGradients() {
    const auto buckets = PlanGradientBuckets(graph_, strategy_, options_.gradient_bucket_bytes);
    for (size_t b = 0; b < buckets.size(); ++b) {
      std::vector<std::string> keys;
      for (const std::string& t : buckets[b].tensors) {
        keys.push_back(layouts_.at(t).period < StepPeriod() ? Accumulated(t) : t);
      }
      OFL_RETURN_IF_ERROR(EmitBucket(buckets[b], keys, "bucket" + std::to_string(b)));
    }
    return Status::OK();
  }

  // One bucket: per rank, the members concatenated into one register laid
  // out as gradient_buckets.h FusedGradients says, one boxing of that (the
  // all-reduce or reduce-scatter), then each member's part sliced back out
  // in its shape; consumers of a member's boxing get those.
  Status EmitBucket(const FusedGradients& bucket, const std::vector<std::string>& keys,
                    const std::string& name) {
    const Layout& first = layouts_.at(keys[0]);
    const int first_task = builder_.plan().tasks_size();
    std::vector<int64_t> fused;
    for (size_t i = 0; i < first.placement.ranks().size(); ++i) {
      fused.push_back(Concatenate(bucket, keys, name, i));
    }
    SetStepRate(first_task, first.period);
    OFL_ASSIGN_OR_RETURN(BoxingPlan plan,
                         PlanBoxing({bucket.shape, bucket.dtype}, first.placement, bucket.from,
                                    first.placement, bucket.to, name));
    const int boxing_task = builder_.plan().tasks_size();
    std::vector<int64_t> reduced = EmitBoxing(plan, name, fused, &builder_, options_.num_slots);
    SetStepRate(boxing_task, first.period);
    const int split_task = builder_.plan().tasks_size();
    const int64_t rows = bucket.kind == BucketKind::kReduceScatter ? bucket.shape[0] : 1;
    int64_t offset = 0;  // in the elements of one row
    for (size_t j = 0; j < keys.size(); ++j) {
      std::vector<int64_t> regs;
      for (size_t i = 0; i < first.placement.ranks().size(); ++i) {
        regs.push_back(SliceOut(bucket, layouts_.at(keys[j]).tensor, name, offset,
                                bucket.elements[j] / rows, i, reduced[i]));
      }
      offset += bucket.elements[j] / rows;
      boxed_[{keys[j], first.placement.ToString() + " " + bucket.to.ToString()}] = regs;
    }
    SetStepRate(split_task, first.period);
    return Status::OK();
  }

  // Rank index i's bucket register: its members as [n] (all-reduce) or
  // [p, n / p] views (reduce-scatter), concatenated along the last axis.
  int64_t Concatenate(const FusedGradients& bucket, const std::vector<std::string>& keys,
                      const std::string& name, size_t i) {
    const int64_t rank = layouts_.at(keys[0]).placement.ranks()[i];
    const bool scatter = bucket.kind == BucketKind::kReduceScatter;
    std::vector<int64_t> flat;
    for (size_t j = 0; j < keys.size(); ++j) {
      const int64_t n = bucket.elements[j];
      const std::vector<int64_t> dims =
          scatter ? std::vector<int64_t>{bucket.shape[0], n / bucket.shape[0]}
                  : std::vector<int64_t>{n};
      flat.push_back(AddLocalOp(name + "/flatten" + std::to_string(j), "reshape",
                                AttrMap({{"shape", dims}}), rank,
                                {layouts_.at(keys[j]).registers[i]}, {Shape(dims), bucket.dtype}));
    }
    const int64_t reg =
        AddLocalOp(name + "/concat", "concat", AttrMap({{"axis", int64_t{scatter ? 1 : 0}}}), rank,
                   flat, {bucket.shape, bucket.dtype});
    proto::RegisterDesc* r = builder_.mutable_register(reg);
    for (int64_t d : bucket.shape.dims()) {
      r->mutable_logical_shape()->add_dims(d);
      r->add_logical_offset(0);
    }
    r->set_nd_sbp(bucket.from.ToString());
    return reg;
  }

  // Rank index i's part of `tensor` in `reduced` (the bucket after its
  // boxing): elements [offset, offset + n) of its one row, in the shape of
  // its slice of `tensor` laid out as bucket.to; that slice's register.
  int64_t SliceOut(const FusedGradients& bucket, const std::string& tensor, const std::string& name,
                   int64_t offset, int64_t n, size_t i, int64_t reduced) {
    const std::string part = name + "/" + tensor;
    const bool scatter = bucket.kind == BucketKind::kReduceScatter;
    const int64_t rank = bucket.placement.ranks()[i];
    auto dims = [&](int64_t row, int64_t col) {
      return scatter ? std::vector<int64_t>{row, col} : std::vector<int64_t>{col};
    };
    const int64_t sliced = AddLocalOp(
        part + "/slice", "slice",
        AttrMap({{"start", dims(0, offset)}, {"stop", dims(1, offset + n)}, {"step", dims(1, 1)}}),
        rank, {reduced}, {Shape(dims(1, n)), bucket.dtype});
    const TensorDesc desc = graph_.Desc(tensor).value();
    const TensorSlice slice = SliceOf(desc.shape, bucket.placement.hierarchy(), bucket.to,
                                      bucket.placement.Coordinates(static_cast<int64_t>(i)));
    const int64_t out =
        AddLocalOp(part + "/reshape", "reshape", AttrMap({{"shape", slice.shape.dims()}}), rank,
                   {sliced}, {slice.shape, desc.dtype});
    proto::RegisterDesc* r = builder_.mutable_register(out);
    for (int64_t d : desc.shape.dims()) r->mutable_logical_shape()->add_dims(d);
    for (int64_t o : slice.offset) r->add_logical_offset(o);
    r->set_nd_sbp(bucket.to.ToString());
    return out;
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

  // The pairs options_.fuse_matmul_bias fuses: both ops on one one-rank placement.
  MatmulBiasFusion Fusion() const {
    MatmulBiasFusion f = MatmulBiasFusion::None(graph_);
    if (!options_.fuse_matmul_bias) return f;
    const MatmulBiasFusion found = FindMatmulBias(graph_);
    for (size_t i = 0; i < found.absorbs.size(); ++i) {
      if (found.absorbs[i] < 0) continue;
      const Placement& p = strategy_.PlacementOf(graph_.ops()[i].name);
      const Placement& q = strategy_.PlacementOf(graph_.ops()[found.absorbs[i]].name);
      if (p.ranks().size() != 1 || !(p == q)) continue;
      f.absorbs[i] = found.absorbs[i];
      f.folded[found.absorbs[i]] = true;
    }
    return f;
  }

  // `placed_as`: the op whose placement the task takes (a fused task: its bias_add's).
  Status AddOp(const OpNode& node, const NdSbpSignature& sig, const std::string& placed_as = "") {
    const Placement& placement = strategy_.PlacementOf(placed_as.empty() ? node.name : placed_as);
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
