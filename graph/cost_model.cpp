// BuildCostModel and the CostModel's map back to a Strategy (cost_model.h).
#include "graph/cost_model.h"

#include <algorithm>
#include <chrono>
#include <tuple>

#include "graph/cost_model_internal.h"
#include "oneflow_lite/core/checked_math.h"
#include "search/collective_time.h"

namespace ofl {

const char* CostNodeKindName(CostNodeKind kind) {
  switch (kind) {
    case CostNodeKind::kInput:
      return "input";
    case CostNodeKind::kVariable:
      return "variable";
    case CostNodeKind::kOp:
      return "op";
  }
  return "?";
}

OpRole RoleOf(const OpNode& node) {
  const OpDef* def = OpRegistry::Find(node.type).value();
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    if (def->is_mutable_input(static_cast<int>(i))) return OpRole::kUpdate;
  }
  return node.name.rfind("grad/", 0) == 0 ? OpRole::kBackward : OpRole::kForward;
}

int CostModel::NodeOf(const std::string& op_or_source) const {
  auto it = node_of_.find(op_or_source);
  return it == node_of_.end() ? -1 : it->second;
}

namespace {

NdSbp AllBroadcast(int64_t axes) { return NdSbp(std::vector<Sbp>(axes, Sbp::Broadcast())); }

// The NdSbp a node's candidate gives tensor `output_index` (sources: the
// tensor itself, or a state variable that follows it).
const NdSbp& Produced(const CostNodeInfo& n, int output_index, int candidate) {
  if (n.kind != CostNodeKind::kOp) return n.sbps[candidate];
  return n.signatures[candidate].outputs[output_index];
}

// "variable 'w' of shape (2, 3) float32" or "op 'fc' (matmul) with outputs (4, 3) float32".
std::string DescribeNode(const OpGraph& graph, const CostNodeInfo& n) {
  if (n.kind != CostNodeKind::kOp) {
    const TensorDesc d = graph.Desc(n.name).value();
    return StrCat(CostNodeKindName(n.kind), " '", n.name, "' of shape ", d.shape, " ",
                  DataTypeName(d.dtype));
  }
  std::string outputs;
  for (const OpNode& op : graph.ops()) {
    if (op.name != n.name) continue;
    for (const std::string& o : op.outputs) {
      const TensorDesc d = graph.Desc(o).value();
      outputs += StrCat(outputs.empty() ? "" : ", ", d.shape, " ", DataTypeName(d.dtype));
    }
  }
  return StrCat("op '", n.name, "' (", n.op_type, ") with outputs ", outputs);
}

// The `count` nodes whose smallest candidate needs most, largest first:
// "variable 'w' of shape (...) float32 needs 16 GiB, ...".
std::string LargestNeeds(const OpGraph& graph, const CostModel& model,
                         std::vector<std::pair<int64_t, int>> needs, size_t count) {
  std::stable_sort(needs.begin(), needs.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  std::string text;
  for (size_t i = 0; i < needs.size() && i < count && needs[i].first > 0; ++i) {
    const int64_t bytes = needs[i].first;
    text += StrCat(i ? ", " : "", DescribeNode(graph, model.nodes()[needs[i].second]), " needs ",
                   bytes == kInt64Max ? "more than int64 can hold (8 EiB)"
                                      : StrCat(internal::GiB(bytes), " GiB"));
  }
  return text;
}

}  // namespace

const NdSbp& CostModel::ProducedSbp(int edge, int candidate) const {
  const CostEdgeInfo& e = edges_[edge];
  return Produced(nodes_[e.producer], e.output_index, candidate);
}

const NdSbp& CostModel::WantedSbp(int edge, int candidate) const {
  const CostEdgeInfo& e = edges_[edge];
  return nodes_[e.consumer].signatures[candidate].inputs[e.input_index];
}

Maybe<std::shared_ptr<const BoxingPlan>> CostModel::EdgeBoxing(int edge, int producer_candidate,
                                                               int consumer_candidate) const {
  OFL_ENSURE(edge >= 0 && edge < static_cast<int>(edges_.size()), "cost model: no edge ", edge);
  const CostEdgeInfo& e = edges_[edge];
  OFL_ENSURE(producer_candidate >= 0 && producer_candidate < graph_.num_candidates(e.producer) &&
                 consumer_candidate >= 0 && consumer_candidate < graph_.num_candidates(e.consumer),
             "cost model: edge '", e.tensor, "' has no candidates (", producer_candidate, ", ",
             consumer_candidate, ")");
  const Placement& from = nodes_[e.producer].placement;
  const Placement& to = nodes_[e.consumer].placement;
  std::vector<int64_t> desc = e.desc.shape.dims();
  desc.push_back(static_cast<int64_t>(e.desc.dtype));
  std::lock_guard<std::mutex> lock(boxing_mutex_);
  auto id = [&](const Placement& p) {
    auto it = std::find(boxing_placements_.begin(), boxing_placements_.end(), p);
    if (it == boxing_placements_.end()) it = boxing_placements_.insert(it, p);
    return static_cast<int>(it - boxing_placements_.begin());
  };
  BoxingKey key{std::move(desc), id(from), ProducedSbp(edge, producer_candidate), id(to),
                WantedSbp(edge, consumer_candidate)};
  auto it = boxing_cache_.find(key);
  if (it != boxing_cache_.end()) return it->second;
  OFL_ASSIGN_OR_RETURN(BoxingPlan plan, PlanBoxingBytes(e.desc, from, std::get<2>(key), to,
                                                        std::get<4>(key), e.tensor));
  auto shared = std::make_shared<const BoxingPlan>(std::move(plan));
  boxing_cache_.emplace(std::move(key), shared);
  return shared;
}

Maybe<double> CostModel::BoxingSeconds(const BoxingPlan& plan) const {
  return internal::BoxingPlanSeconds(cluster_, plan);
}

Maybe<Strategy> CostModel::ToStrategy(const std::vector<int>& choice) const {
  OFL_ENSURE(choice.size() == nodes_.size(), "cost model: a choice of ", choice.size(),
             " candidates for ", nodes_.size(), " nodes");
  Strategy s = placements_;
  for (size_t u = 0; u < nodes_.size(); ++u) {
    const CostNodeInfo& n = nodes_[u];
    const int c = choice[u];
    OFL_ENSURE(c >= 0 && c < graph_.num_candidates(static_cast<int>(u)), "cost model: node '",
               n.name, "' has no candidate ", c);
    if (n.kind == CostNodeKind::kOp) {
      s.SetSignature(n.name, n.signatures[c]);
      continue;
    }
    s.SetSourceSbp(n.name, n.sbps[c]);
    if (n.update_op.empty()) continue;
    s.SetSignature(n.update_op, n.signatures[c]);
    for (const auto& [state, follows] : n.states) {
      s.SetSourceSbp(state, follows ? n.sbps[c] : AllBroadcast(n.sbps[c].size()));
    }
  }
  return s;
}

Maybe<std::vector<int>> CostModel::ChoiceOf(const Strategy& strategy) const {
  std::vector<int> choice(nodes_.size(), -1);
  for (size_t u = 0; u < nodes_.size(); ++u) {
    const CostNodeInfo& n = nodes_[u];
    const int k = graph_.num_candidates(static_cast<int>(u));
    if (n.kind == CostNodeKind::kOp || !n.update_op.empty()) {
      const std::string& op = n.kind == CostNodeKind::kOp ? n.name : n.update_op;
      auto it = strategy.signatures().find(op);
      OFL_ENSURE(it != strategy.signatures().end(),
                 "cost model: the strategy has no signature "
                 "for op '",
                 op, "'");
      for (int c = 0; c < k && choice[u] < 0; ++c) {
        if (n.signatures[c] == it->second) choice[u] = c;
      }
      OFL_ENSURE(choice[u] >= 0, "cost model: op '", op, "' signature ", it->second.ToString(),
                 " is no candidate here (a P parameter, or state that does not follow it)");
      continue;
    }
    auto it = strategy.sources().find(n.name);
    OFL_ENSURE(it != strategy.sources().end(), "cost model: the strategy has no NdSbp for '",
               n.name, "'");
    for (int c = 0; c < k && choice[u] < 0; ++c) {
      if (n.sbps[c] == it->second) choice[u] = c;
    }
    OFL_ENSURE(choice[u] >= 0, "cost model: ", CostNodeKindName(n.kind), " '", n.name, "' NdSbp ",
               it->second, " is no candidate here");
  }
  return choice;
}

CostOptions ArrivalsFromPins(const OpGraph& graph, CostOptions options,
                             const std::map<std::string, NdSbp>& pinned) {
  for (const std::string& input : graph.input_names()) {
    auto it = pinned.find(input);
    if (it == pinned.end()) continue;
    const NdSbp& s = it->second;
    bool values = true;  // a pin no input can take is the planner's error to give
    for (const Sbp& a : s.axes()) {
      values = values && !a.is_partial_sum() &&
               (!a.is_split() || a.axis() < graph.Desc(input).value().shape.ndim());
    }
    if (values) options.input_arrival.emplace(input, s);
  }
  return options;
}

Maybe<std::shared_ptr<const CostModel>> BuildCostModel(const OpGraph& graph,
                                                       const Strategy& placements,
                                                       const Cluster& cluster,
                                                       const CostOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  OFL_ENSURE(options.micro_batches >= 1, "cost model: micro_batches=", options.micro_batches,
             " must be >= 1");
  OFL_ENSURE(options.bytes_per_parameter >= 0,
             "cost model: bytes_per_parameter=", options.bytes_per_parameter, " is negative");
  OFL_ENSURE(options.memory_limit_bytes >= 0,
             "cost model: memory_limit_bytes=", options.memory_limit_bytes, " is negative");
  OFL_ENSURE(placements.placement().size() > 0, "cost model: the strategy has no placement");
  OFL_ENSURE(options.gradient_bucket_bytes >= 0,
             "cost model: gradient_bucket_bytes=", options.gradient_bucket_bytes, " is negative");
  for (const auto& [name, sbp] : options.input_arrival) {
    const auto& inputs = graph.input_names();
    OFL_ENSURE(std::find(inputs.begin(), inputs.end(), name) != inputs.end(),
               "cost model: input_arrival names '", name, "', which is no fed input");
  }
  std::shared_ptr<CostModel> model(new CostModel(cluster));
  model->options_ = options;
  model->placements_ = Strategy(placements.placement());
  internal::Builder builder(graph, placements, cluster, options);
  OFL_RETURN_IF_ERROR(builder.Run(&model->graph_, &model->nodes_, &model->edges_,
                                  &model->placements_, &model->stats_));
  for (size_t u = 0; u < model->nodes_.size(); ++u) {
    const CostNodeInfo& n = model->nodes_[u];
    model->node_of_[n.name] = static_cast<int>(u);
    if (!n.update_op.empty()) model->node_of_[n.update_op] = static_cast<int>(u);
  }
  const int64_t limit = internal::MemoryLimit(cluster, options);
  OFL_RETURN_IF_ERROR(model->graph_.SetMemoryLimit(limit));
  // The exact need (the graph's candidates are capped): more than int64
  // bytes is infeasible even without a limit.
  const int64_t need = builder.smallest_memory_need();
  if (need > limit || need == kInt64Max) {
    return InvalidArgument(
        "cost model: no strategy fits device memory: the smallest per-device "
        "memory any strategy needs is ",
        need == kInt64Max ? "more than int64 can hold (8 EiB)"
                          : StrCat(internal::GiB(need), " GiB"),
        ", above the limit of ", internal::GiB(limit), " GiB (cluster '", cluster.name(), "', ",
        options.micro_batches,
        " micro-batch(es)); largest: ", LargestNeeds(graph, *model, builder.node_needs(), 3),
        "; use more devices, pipeline stages or micro-batches");
  }
  model->stats_.ops = static_cast<int64_t>(graph.ops().size());
  model->stats_.build_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return std::shared_ptr<const CostModel>(model);
}

}  // namespace ofl
