#include "oneflow_lite/api/planning.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <set>

#include "graph/searchers/autoddl_searcher.h"
#include "graph/searchers/exact_searcher.h"
#include "oneflow_lite/core/checked_math.h"
#include "search/collective_time.h"

namespace ofl {

Maybe<PlanOptions> PlanOptionsFrom(const PlanRequest& r) {
  PlanOptions options;
  options.searcher = r.searcher;
  for (const auto& [tensor, text] : r.pinned) {
    auto parsed = NdSbp::Parse(text);
    OFL_ENSURE(parsed.ok(), "pinned '", tensor, "': ", parsed.status().message());
    options.pinned[tensor] = parsed.value();
  }
  OFL_ENSURE(r.micro_batches >= 1, "plan: micro_batches=", r.micro_batches, " (needs >= 1)");
  options.cost.micro_batches = r.micro_batches;
  if (r.compute_dtype) {
    OFL_ASSIGN_OR_RETURN(options.cost.compute_dtype, ParseDataType(*r.compute_dtype));
  }
  if (r.bytes_per_parameter) options.cost.bytes_per_parameter = *r.bytes_per_parameter;
  if (r.memory_limit) {
    OFL_ENSURE(*r.memory_limit != 0,
               "plan: memory_limit=0 (bytes per device; None: the cluster's, -1: no limit)");
    options.cost.memory_limit_bytes = *r.memory_limit < 0 ? kNoMemoryLimit : *r.memory_limit;
  }
  if (r.gradient_bucket_bytes) {
    OFL_ENSURE(*r.gradient_bucket_bytes >= 0,
               "plan: gradient_bucket_bytes=", *r.gradient_bucket_bytes,
               " (needs >= 0; 0: no bucketing)");
    options.cost.gradient_bucket_bytes = *r.gradient_bucket_bytes;
  }
  options.cost.overlap_gradients = r.overlap_gradients;
  auto& exact = options.searcher_options.Mutable<ExactSearcherOptions>();
  if (r.exact_time_budget) exact.exact.time_budget_seconds = *r.exact_time_budget;
  if (r.exact_max_table_entries) {
    OFL_ENSURE(*r.exact_max_table_entries >= 1,
               "plan: exact_max_table_entries=", *r.exact_max_table_entries, " (needs >= 1)");
    exact.exact.max_table_entries = *r.exact_max_table_entries;
    exact.exact.max_total_entries =
        std::max(exact.exact.max_total_entries, 8 * *r.exact_max_table_entries);
  }
  OFL_ENSURE(r.autoddl_random_starts >= 0, "plan: autoddl_random_starts=", r.autoddl_random_starts,
             " (needs >= 0)");
  options.searcher_options.Mutable<AutoddlSearcherOptions>().descent.num_random_starts =
      r.autoddl_random_starts;
  exact.starts_from_autoddl = r.exact_starts_from_autoddl;
  if (r.optimality_cap) {
    OFL_ENSURE(*r.optimality_cap > 0, "plan: optimality_cap_s=", *r.optimality_cap,
               " (seconds, > 0; None: not measured)");
    options.optimality_cap_seconds = *r.optimality_cap;
  }
  return options;
}

Maybe<Placement> MeshPlacement(const std::vector<int64_t>& hierarchy,
                               const std::optional<std::vector<int64_t>>& ranks_arg) {
  std::vector<int64_t> ranks;
  if (ranks_arg) {
    ranks = *ranks_arg;
  } else {
    int64_t size = 1;
    for (int64_t h : hierarchy) size *= h;
    for (int64_t r = 0; r < size; ++r) ranks.push_back(r);
  }
  return Placement::Create(DeviceType::kCPU, ranks, Shape(hierarchy));
}

Maybe<PlannedStrategy> PlanRequested(const OpGraph& graph, const Placement& placement,
                                     const Cluster& cluster, const PlanRequest& request) {
  OFL_ASSIGN_OR_RETURN(PlanOptions options, PlanOptionsFrom(request));
  return PlanStrategy(graph, placement, cluster, options);
}

Maybe<PlannedStrategy> PlanOnModel(const OpGraph& graph, std::shared_ptr<const CostModel> model,
                                   const PlanRequest& request) {
  OFL_ASSIGN_OR_RETURN(PlanOptions options, PlanOptionsFrom(request));
  return PlanWithModel(graph, std::move(model), options);
}

Maybe<std::shared_ptr<const CostModel>> BuildPlanModel(const OpGraph& graph,
                                                       const Placement& placement,
                                                       const Cluster& cluster,
                                                       const PlanRequest& request) {
  OFL_ASSIGN_OR_RETURN(PlanOptions options, PlanOptionsFrom(request));
  OFL_ASSIGN_OR_RETURN(Strategy placements, PlacementsFor(graph, placement, options));
  return BuildCostModel(graph, placements, cluster,
                        ArrivalsFromPins(graph, options.cost, options.pinned));
}

std::vector<std::string> PlanSearchers() { return SearcherNames(); }

Maybe<Cluster> PresetCluster(const std::string& name) { return Cluster::Preset(name); }
Maybe<Cluster> LoadCluster(const std::string& path) { return Cluster::Load(path); }
std::vector<std::string> ClusterPresets() { return Cluster::PresetNames(); }

Maybe<double> ClusterCollectiveSeconds(const Cluster& cluster, const std::string& kind,
                                       double bytes, int64_t group_size, int level) {
  OFL_ENSURE(level >= 0 && level < cluster.num_levels(), "cluster '", cluster.name(),
             "' has no level ", level, " (it has ", cluster.num_levels(), ")");
  OFL_ENSURE(std::isfinite(bytes) && bytes >= 0, "collective seconds: bytes=", bytes,
             " must be >= 0 and finite");
  OFL_ENSURE(group_size >= 1, "collective seconds: group_size=", group_size, " must be >= 1");
  for (CollectiveKind k :
       {CollectiveKind::kAllReduce, CollectiveKind::kReduceScatter, CollectiveKind::kAllGather,
        CollectiveKind::kAllToAll, CollectiveKind::kSendRecv}) {
    if (kind == CollectiveKindName(k)) {
      return CollectiveSeconds(k, bytes, group_size, cluster.level(level));
    }
  }
  return InvalidArgument("collective seconds: kind='", kind,
                         "' is not one of all_reduce, reduce_scatter, all_gather, all_to_all, "
                         "send_recv");
}

Maybe<Cluster> FindCluster(const std::string& name) {
  auto preset = Cluster::Preset(name);
  if (preset.ok()) return preset;
  if (std::ifstream(name).good()) return Cluster::Load(name);
  std::string names;
  for (const std::string& n : Cluster::PresetNames()) names += (names.empty() ? "" : ", ") + n;
  return InvalidArgument("cluster '", name, "' is neither a preset (", names,
                         ") nor a readable file");
}

Maybe<StepEstimate> EstimatePlannedStep(const PlannedStrategy& planned) {
  OFL_ENSURE(planned.model != nullptr, "planning: the planned strategy has no cost model");
  return EstimateStep(*planned.model, planned.solution.choice);
}

Maybe<std::map<int64_t, int64_t>> PredictedBytesSent(const PlannedStrategy& planned) {
  return PredictedBytesSent(planned, OpGraph(), 0);
}

Maybe<std::map<int64_t, int64_t>> PredictedBytesSent(const PlannedStrategy& planned,
                                                     const OpGraph& graph,
                                                     int64_t gradient_bucket_bytes) {
  OFL_ENSURE(planned.model != nullptr, "planned strategy '", planned.searcher,
             "' has no cost model");
  const CostModel& model = *planned.model;
  // Fused gradients: one boxing of each bucket's register (all-reduce or reduce-scatter).
  std::set<std::string> fused;
  std::map<int64_t, int64_t> bucket_bytes;
  for (const FusedGradients& b :
       PlanGradientBuckets(graph, planned.strategy, gradient_bucket_bytes)) {
    for (const std::string& t : b.tensors) {
      fused.insert(t + "|" + b.placement.ToString() + "|" + b.to.ToString());
    }
    OFL_ASSIGN_OR_RETURN(BoxingPlan plan, PlanBoxingBytes({b.shape, b.dtype}, b.placement, b.from,
                                                          b.placement, b.to, "gradient bucket"));
    for (const auto& [rank, sent] : plan.bytes_sent) {
      bucket_bytes[rank] = SaturatingAdd(bucket_bytes[rank], sent);
    }
  }
  const std::vector<int>& choice = planned.solution.choice;
  std::map<int64_t, int64_t> bytes;
  for (int64_t rank : model.placements().placement().ranks()) bytes[rank] = 0;
  // Lowering boxes a tensor once per (placement, wanted NdSbp), however many
  // consumers want it so (graph/distributed_lowering.cpp); count it once too.
  // (The cost graph's edges still charge each consumer: a pairwise model.)
  std::set<std::string> boxed;
  for (int e = 0; e < model.graph().num_edges(); ++e) {
    const CostEdgeInfo& info = model.edges()[e];
    const int pc = choice[info.producer];
    const int cc = choice[info.consumer];
    const Placement& to = model.nodes()[info.consumer].placement;
    if (model.ProducedSbp(e, pc) == model.WantedSbp(e, cc) &&
        model.nodes()[info.producer].placement == to) {
      continue;
    }
    const std::string key =
        info.tensor + "|" + to.ToString() + "|" + model.WantedSbp(e, cc).ToString();
    if (fused.count(key) > 0 || !boxed.insert(key).second) continue;
    OFL_ASSIGN_OR_RETURN(std::shared_ptr<const BoxingPlan> plan, model.EdgeBoxing(e, pc, cc));
    for (const auto& [rank, sent] : plan->bytes_sent) {  // saturating, as the plan's bytes
      bytes[rank] = SaturatingAdd(bytes[rank], SaturatingMul(sent, info.multiplier));
    }
  }
  for (const auto& [rank, sent] : bucket_bytes) bytes[rank] = SaturatingAdd(bytes[rank], sent);
  return bytes;
}

Maybe<MemoryEstimate> PredictPlannedMemory(const OpGraph& graph, const PlannedStrategy& planned,
                                           const std::vector<std::string>& fetches,
                                           const DistributedOptions& options) {
  return PredictSessionMemory(graph, planned.strategy, fetches, options);
}

Maybe<StrategyReport> ReportPlanned(const OpGraph& graph, const PlannedStrategy& planned,
                                    const MemoryEstimate* memory) {
  OFL_ENSURE(planned.model != nullptr, "planned strategy '", planned.searcher,
             "' has no cost model");
  OFL_ASSIGN_OR_RETURN(StrategyReport report,
                       ReportStrategy(graph, *planned.model, planned.solution));
  report.optimality = planned.stats.optimality;
  if (memory != nullptr) {
    report.peak_bytes = memory->max_bytes;
    report.peak_text = memory->ToText();
  }
  return report;
}

Maybe<StrategyDiff> DiffPlanned(const PlannedStrategy& before, const PlannedStrategy& after) {
  OFL_ENSURE(before.model != nullptr && after.model != nullptr,
             "strategy diff: a planned strategy has no cost model");
  std::vector<int> after_choice = after.solution.choice;
  if (after.model != before.model) {
    OFL_ASSIGN_OR_RETURN(after_choice, before.model->ChoiceOf(after.strategy));
  }
  return DiffStrategies(*before.model, before.solution.choice, after_choice);
}

}  // namespace ofl
