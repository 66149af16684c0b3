// The cost model's nodes and edges from the OpGraph (cost_model.h rules).
#include <algorithm>
#include <cmath>
#include <functional>

#include "graph/cost_model_internal.h"
#include "oneflow_lite/core/checked_math.h"

namespace ofl::internal {

namespace {

std::vector<int> MutableInputIndices(const OpNode& node) {
  const OpDef* def = OpRegistry::Find(node.type).value();
  std::vector<int> out;
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    if (def->is_mutable_input(static_cast<int>(i))) out.push_back(static_cast<int>(i));
  }
  return out;
}

// Bytes of the largest slice of `d` on `p` under `s`.
int64_t SliceBytes(const TensorDesc& d, const Placement& p, const NdSbp& s) {
  return SaturatingMul(LargestSliceElements(d.shape, p.hierarchy(), s), SizeOf(d.dtype));
}

}  // namespace

Status Builder::AddNode(CostGraph*, std::vector<CostNodeInfo>* nodes, CostNodeInfo info,
                        std::vector<Candidate> candidates) {
  const int index = static_cast<int>(nodes->size());
  node_of_[info.name] = index;
  if (!info.update_op.empty()) node_of_[info.update_op] = index;
  nodes->push_back(std::move(info));
  int64_t smallest = kInt64Max;
  for (const Candidate& c : candidates) smallest = std::min(smallest, c.memory_bytes);
  smallest_need_ = SaturatingAdd(smallest_need_, candidates.empty() ? 0 : smallest);
  node_needs_.emplace_back(candidates.empty() ? 0 : smallest, index);
  pending_.push_back(std::move(candidates));
  return Status::OK();
}

Status Builder::AddPendingNodes(CostGraph* g, const std::vector<CostNodeInfo>& nodes) {
  CHECK_EQ(pending_.size(), nodes.size());
  // Headroom for each node above its smallest candidate such that the sum
  // of every node's largest candidate fits int64. A need beyond int64 is
  // reported by BuildCostModel; until then every candidate gets an equal share.
  const int64_t n = std::max<int64_t>(1, static_cast<int64_t>(nodes.size()));
  const bool beyond = smallest_need_ == kInt64Max;
  const int64_t headroom = beyond ? 0 : (kInt64Max - smallest_need_) / n;
  for (size_t u = 0; u < nodes.size(); ++u) {
    const int64_t cap = beyond ? kInt64Max / n : SaturatingAdd(node_needs_[u].first, headroom);
    for (Candidate& c : pending_[u]) c.memory_bytes = std::min(c.memory_bytes, cap);
    OFL_ASSIGN_OR_RETURN(int index, g->AddNode(nodes[u].name, std::move(pending_[u])));
    CHECK_EQ(index, static_cast<int>(u));
  }
  pending_.clear();
  return Status::OK();
}

Maybe<NdSbp> Builder::ArrivalOf(const std::string& input, const TensorDesc& desc,
                                const Placement& placement) const {
  const Shape& h = placement.hierarchy();
  auto it = options_.input_arrival.find(input);
  if (it == options_.input_arrival.end()) {
    return NdSbp(
        std::vector<Sbp>(h.ndim(), desc.shape.ndim() > 0 ? Sbp::Split(0) : Sbp::Broadcast()));
  }
  const NdSbp& s = it->second;
  OFL_ENSURE(s.size() == h.ndim(), "cost model: input '", input, "' arrives as ", s, ", ", s.size(),
             " axes for a mesh of ", h.ndim());
  for (const Sbp& a : s.axes()) {
    OFL_ENSURE(!a.is_partial_sum(), "cost model: input '", input, "' arrives as ", s,
               ": a fed tensor holds values, not partial sums");
    OFL_ENSURE(!a.is_split() || a.axis() < desc.shape.ndim(), "cost model: input '", input,
               "' arrives as ", s, " but has ", desc.shape.ndim(), " dimension(s)");
  }
  return s;
}

Status Builder::AddInputNode(CostGraph* g, std::vector<CostNodeInfo>* nodes,
                             const std::string& name) {
  const int64_t k = options_.micro_batches;
  CostNodeInfo info;
  info.kind = CostNodeKind::kInput;
  info.name = name;
  info.multiplier = k;
  info.placement = placements_.SourcePlacement(name);
  const TensorDesc desc = Costed(graph_.Desc(name).value());
  info.sbps = SourceSbps(desc.shape, info.placement.hierarchy());
  // Feeding: every device loads its slice from the host, charged at the
  // innermost level's bandwidth (the Cluster has no host-link figure), and
  // fetches what the layout it arrives in does not give it.
  OFL_ASSIGN_OR_RETURN(const NdSbp arrival, ArrivalOf(name, desc, info.placement));
  const int pl = PlacementId(info.placement);
  const double load_per_byte = 1.0 / cluster_.level(0).bandwidth_bytes_per_s;
  std::vector<Candidate> candidates;
  for (const NdSbp& s : info.sbps) {
    const int64_t bytes = SliceBytes(desc, info.placement, s);
    OFL_ASSIGN_OR_RETURN(double fetch, CachedBoxingSeconds(desc, pl, arrival, pl, s, name));
    candidates.push_back(
        {static_cast<double>(k) * (load_per_byte * static_cast<double>(bytes) + fetch), bytes});
  }
  info.flops.assign(info.sbps.size(), 0.0);
  producer_of_[name] = {static_cast<int>(nodes->size()), 0};
  return AddNode(g, nodes, std::move(info), std::move(candidates));
}

Status Builder::AddUpdateCandidates(const OpNode& op, const VariableInfo& var,
                                    const std::function<int64_t(const NdSbp&)>& memory,
                                    CostNodeInfo* info, std::vector<Candidate>* candidates) {
  const std::string& name = info->name;
  OFL_ENSURE(placements_.PlacementOf(op.name) == info->placement, "cost model: op '", op.name,
             "' updates variable '", name, "' on ", placements_.PlacementOf(op.name).ToString(),
             " but the variable lives on ", info->placement.ToString());
  info->update_op = op.name;
  info->op_type = op.type;
  std::vector<int> mut = MutableInputIndices(op);
  for (size_t j = 1; j < mut.size(); ++j) {
    const std::string& state = op.inputs[mut[j]];
    info->states.push_back({state, graph_.Desc(state).value().shape == var.desc.shape});
  }
  OFL_ASSIGN_OR_RETURN(auto signatures, CandidateSignatures(graph_, op, info->placement));
  OFL_ASSIGN_OR_RETURN(const OpWork work, WorkOf(op, var.desc.dtype));
  const auto& [ctx, outs, flops, per_second, dtype] = work;
  for (const NdSbpSignature& sig : signatures) {
    const NdSbp& p = sig.inputs[mut[0]];
    bool ok = true;
    for (const Sbp& s : p.axes()) ok = ok && !s.is_partial_sum();
    for (size_t j = 1; j < mut.size() && ok; ++j) {
      ok = sig.inputs[mut[j]] ==
           (info->states[j - 1].second ? p : NdSbp(std::vector<Sbp>(p.size(), Sbp::Broadcast())));
    }
    if (!ok) continue;
    const double f = flops * BusiestShare(sig, ctx.inputs, outs, info->placement.hierarchy());
    info->signatures.push_back(sig);
    info->sbps.push_back(p);
    info->flops.push_back(f);
    candidates->push_back({ComputeSeconds(op.type, work, f, 1, info->placement), memory(p)});
  }
  OFL_ENSURE(!candidates->empty(), "cost model: op '", op.name, "' (", op.type,
             ") has no signature that keeps variable '", name, "' and its state alike");
  return Status::OK();
}

Status Builder::AddVariableNode(CostGraph* g, std::vector<CostNodeInfo>* nodes,
                                const std::string& name, const OpNode* update) {
  const VariableInfo& var = graph_.variable(name);
  const TensorDesc desc = Costed(var.desc);
  const double bpp = options_.bytes_per_parameter > 0
                         ? options_.bytes_per_parameter
                         : 4.0 * static_cast<double>(SizeOf(desc.dtype));
  CostNodeInfo info;
  info.kind = CostNodeKind::kVariable;
  info.name = name;
  info.placement = placements_.SourcePlacement(name);
  const Shape& h = info.placement.hierarchy();
  auto memory = [&](const NdSbp& s) {
    if (!var.trainable) return SliceBytes(desc, info.placement, s);
    return SaturatingFromDouble(
        std::ceil(bpp * static_cast<double>(LargestSliceElements(desc.shape, h, s))));
  };
  std::vector<Candidate> candidates;
  if (update == nullptr) {
    info.sbps = SourceSbps(desc.shape, h);
    for (const NdSbp& s : info.sbps) candidates.push_back({0.0, memory(s)});
    info.flops.assign(info.sbps.size(), 0.0);
  } else {
    OFL_RETURN_IF_ERROR(AddUpdateCandidates(*update, var, memory, &info, &candidates));
  }
  producer_of_[name] = {static_cast<int>(nodes->size()), 0};
  return AddNode(g, nodes, std::move(info), std::move(candidates));
}

Status Builder::AddSources(CostGraph* g, std::vector<CostNodeInfo>* nodes) {
  // Updates: the written parameter (first in-place input) and its state.
  std::map<std::string, const OpNode*> update_of;
  std::map<std::string, std::string> state_owner;
  for (const OpNode& node : graph_.ops()) {
    std::vector<int> mut = MutableInputIndices(node);
    if (mut.empty()) continue;
    const std::string& param = node.inputs[mut[0]];
    update_of[param] = &node;
    for (size_t j = 1; j < mut.size(); ++j) state_owner[node.inputs[mut[j]]] = param;
  }
  for (const std::string& name : graph_.input_names()) {
    OFL_RETURN_IF_ERROR(AddInputNode(g, nodes, name));
  }
  for (const std::string& name : graph_.variable_names()) {
    if (state_owner.count(name) > 0) continue;  // follows its parameter's node
    auto update = update_of.find(name);
    OFL_RETURN_IF_ERROR(
        AddVariableNode(g, nodes, name, update == update_of.end() ? nullptr : update->second));
  }
  for (const OpNode& node : graph_.ops()) {
    if (RoleOf(node) == OpRole::kUpdate) continue;
    for (const std::string& in : node.inputs) {
      if (state_owner.count(in) > 0) {
        return Unimplemented("cost model: optimizer state '", in, "' is read by op '", node.name,
                             "'; only its update may use it");
      }
    }
  }
  return Status::OK();
}

Status Builder::AddOps(CostGraph* g, std::vector<CostNodeInfo>* nodes) {
  for (const OpNode& op : graph_.ops()) {
    const OpRole role = RoleOf(op);
    if (role == OpRole::kUpdate) continue;  // folded into its variable's node
    CostNodeInfo info;
    info.kind = CostNodeKind::kOp;
    info.name = op.name;
    info.op_type = op.type;
    info.multiplier = options_.micro_batches;
    info.placement = placements_.PlacementOf(op.name);
    const Shape& h = info.placement.hierarchy();
    OFL_ASSIGN_OR_RETURN(info.signatures, CandidateSignatures(graph_, op, info.placement));
    OFL_ASSIGN_OR_RETURN(const OpWork work, WorkOf(op));
    const auto& [ctx, outs, flops, per_second, dtype] = work;
    std::vector<Candidate> candidates;
    for (const NdSbpSignature& sig : info.signatures) {
      const double f = flops > 0 ? flops * BusiestShare(sig, ctx.inputs, outs, h) : 0.0;
      int64_t memory = 0;
      if (role == OpRole::kForward) {
        for (size_t o = 0; o < outs.size(); ++o) {
          const TensorDesc d = Costed(outs[o]);
          memory = SaturatingAdd(
              memory,
              SaturatingMul(LargestSliceElements(d.shape, h, sig.outputs[o]), SizeOf(d.dtype)));
        }
      }
      info.flops.push_back(f);
      candidates.push_back(
          {ComputeSeconds(op.type, work, f, info.multiplier, info.placement), memory});
    }
    for (size_t o = 0; o < op.outputs.size(); ++o) {
      producer_of_[op.outputs[o]] = {static_cast<int>(nodes->size()), static_cast<int>(o)};
    }
    OFL_RETURN_IF_ERROR(AddNode(g, nodes, std::move(info), std::move(candidates)));
  }
  return Status::OK();
}

Status Builder::AddEdges(CostGraph* g, const std::vector<CostNodeInfo>& nodes,
                         std::vector<CostEdgeInfo>* edges) {
  for (const OpNode& op : graph_.ops()) {
    const bool update = RoleOf(op) == OpRole::kUpdate;
    std::vector<int> mut = update ? MutableInputIndices(op) : std::vector<int>{};
    const int consumer = node_of_.at(op.name);
    for (size_t i = 0; i < op.inputs.size(); ++i) {
      if (std::find(mut.begin(), mut.end(), static_cast<int>(i)) != mut.end()) continue;
      auto p = producer_of_.find(op.inputs[i]);
      CHECK(p != producer_of_.end()) << op.inputs[i];
      if (p->second.first == consumer) continue;
      CostEdgeInfo e;
      e.tensor = op.inputs[i];
      e.desc = Costed(graph_.Desc(e.tensor).value());
      e.producer = p->second.first;
      e.consumer = consumer;
      e.output_index = p->second.second;
      e.input_index = static_cast<int>(i);
      e.multiplier = nodes[consumer].multiplier;
      // A gradient into its update: bucketed, and hidden behind as much
      // backward compute as produced it (one execution's worth).
      const CostNodeInfo& from = nodes[e.producer];
      const bool gradient = update && from.kind == CostNodeKind::kOp;
      std::vector<double> overlap;
      if (gradient && options_.overlap_gradients) {
        const CostNode& producer = g->node(e.producer);
        for (const Candidate& c : producer.candidates) {
          overlap.push_back(c.compute_seconds / static_cast<double>(from.multiplier));
        }
      }
      OFL_ASSIGN_OR_RETURN(EdgeMatrixPtr m,
                           Matrix(e, from, nodes[consumer], gradient ? &overlap : nullptr));
      OFL_RETURN_IF_ERROR(g->AddEdge(e.producer, e.consumer, std::move(m)).status());
      edges->push_back(std::move(e));
    }
  }
  return Status::OK();
}

Status Builder::Run(CostGraph* cost_graph, std::vector<CostNodeInfo>* nodes,
                    std::vector<CostEdgeInfo>* edges, Strategy* placements_out,
                    CostModelStats* stats) {
  const Placement& base = placements_.placement();
  OFL_RETURN_IF_ERROR(cluster_.AxisLevels(base.hierarchy().dims()).status());
  for (const OpNode& op : graph_.ops()) {
    const Placement& p = placements_.PlacementOf(op.name);
    if (p != base) {
      OFL_RETURN_IF_ERROR(cluster_.AxisLevels(p.hierarchy().dims()).status());
      placements_out->SetPlacement(op.name, p);
    }
  }
  std::vector<std::string> sources = graph_.input_names();
  sources.insert(sources.end(), graph_.variable_names().begin(), graph_.variable_names().end());
  for (const std::string& s : sources) {
    const Placement& p = placements_.SourcePlacement(s);
    if (p != base) placements_out->SetSourcePlacement(s, p);
  }
  OFL_RETURN_IF_ERROR(AddSources(cost_graph, nodes));
  OFL_RETURN_IF_ERROR(AddOps(cost_graph, nodes));
  OFL_RETURN_IF_ERROR(AddPendingNodes(cost_graph, *nodes));
  OFL_RETURN_IF_ERROR(AddEdges(cost_graph, *nodes, edges));
  stats->boxing_plans = boxing_plans_;
  stats->distinct_matrices = static_cast<int64_t>(matrix_cache_.size());
  stats->untabled_op_types.assign(untabled_.begin(), untabled_.end());
  return Status::OK();
}

}  // namespace ofl::internal
