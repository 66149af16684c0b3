// PlanGradientBuckets (gradient_buckets.h).
#include "graph/gradient_buckets.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

namespace ofl {

namespace {

struct Candidate {
  int producer = 0;  // index of the producing op in graph order
  std::string tensor;
  std::string group;     // placement, NdSbps, dtype
  FusedGradients shape;  // placement, from, to, dtype of its group
};

std::vector<Candidate> Fusable(const OpGraph& graph, const Strategy& strategy) {
  std::map<std::string, int> producer_of;
  for (size_t k = 0; k < graph.ops().size(); ++k) {
    for (const std::string& o : graph.ops()[k].outputs) producer_of[o] = static_cast<int>(k);
  }
  std::vector<Candidate> out;
  std::set<std::string> seen;
  for (const OpNode& node : graph.ops()) {
    const OpDef* def = OpRegistry::Find(node.type).value();
    bool update = false;
    for (size_t i = 0; i < node.inputs.size(); ++i) update |= def->is_mutable_input(i);
    if (!update) continue;
    const NdSbpSignature& sig = strategy.signature(node.name);
    const Placement& placement = strategy.PlacementOf(node.name);
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      auto producer = producer_of.find(node.inputs[i]);
      if (def->is_mutable_input(i) || producer == producer_of.end()) continue;
      const OpNode& made_by = graph.ops()[producer->second];
      const NdSbp from = strategy.ProducedSbp(graph, node.inputs[i]).value();
      const TensorDesc desc = graph.Desc(node.inputs[i]).value();
      const BucketKind kind =
          strategy.PlacementOf(made_by.name) == placement
              ? FusedBucketKind(desc, placement.hierarchy(), from, sig.inputs[i])
              : BucketKind::kNone;
      const bool fusable = kind != BucketKind::kNone;
      const std::string group = placement.ToString() + from.ToString() + sig.inputs[i].ToString() +
                                DataTypeName(desc.dtype);
      if (!fusable || !seen.insert(node.inputs[i] + "|" + group).second) continue;
      FusedGradients shape;
      shape.kind = kind;
      shape.placement = placement;
      shape.from = from;
      shape.to = sig.inputs[i];
      shape.dtype = desc.dtype;
      out.push_back({producer->second, node.inputs[i], group, std::move(shape)});
    }
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const Candidate& a, const Candidate& b) { return a.producer < b.producer; });
  return out;
}

}  // namespace

BucketKind FusedBucketKind(const TensorDesc& desc, const Shape& hierarchy, const NdSbp& from,
                           const NdSbp& to) {
  if (!IsFloating(desc.dtype) || from.size() != to.size() || from.size() != hierarchy.ndim() ||
      from.size() == 0) {
    return BucketKind::kNone;
  }
  bool partial = false, all_b = true, all_s0 = true;
  for (int64_t a = 0; a < from.size(); ++a) {
    if (from[a].is_split()) return BucketKind::kNone;
    partial = partial || from[a].is_partial_sum();
    all_b = all_b && to[a].is_broadcast();
    all_s0 = all_s0 && to[a].is_split() && to[a].axis() == 0;
  }
  if (!partial) return BucketKind::kNone;
  if (all_b) return BucketKind::kAllReduce;
  const int64_t p = hierarchy.NumElements();
  if (all_s0 && desc.shape.ndim() >= 1 && desc.shape[0] > 0 && desc.shape[0] % p == 0) {
    return BucketKind::kReduceScatter;
  }
  return BucketKind::kNone;
}

std::vector<FusedGradients> PlanGradientBuckets(const OpGraph& graph, const Strategy& strategy,
                                                int64_t bucket_bytes) {
  std::vector<FusedGradients> out;
  if (bucket_bytes <= 0) return out;
  std::map<std::string, FusedGradients> open;
  auto close = [&](const std::string& group) {
    FusedGradients b = std::move(open.at(group));
    open.erase(group);
    const int64_t p = b.placement.size();
    b.shape = b.kind == BucketKind::kReduceScatter ? Shape{p, b.total_elements / p}
                                                   : Shape{b.total_elements};
    if (b.tensors.size() >= 2) out.push_back(std::move(b));
  };
  for (Candidate& c : Fusable(graph, strategy)) {
    auto it = open.find(c.group);
    if (it == open.end()) it = open.emplace(c.group, std::move(c.shape)).first;
    FusedGradients& b = it->second;
    const int64_t n = graph.Desc(c.tensor).value().shape.NumElements();
    b.tensors.push_back(c.tensor);
    b.elements.push_back(n);
    b.total_elements += n;
    if (b.total_elements * static_cast<int64_t>(SizeOf(b.dtype)) >= bucket_bytes) close(c.group);
  }
  while (!open.empty()) close(open.begin()->first);
  return out;
}

}  // namespace ofl
