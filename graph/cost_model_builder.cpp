// The cost model's builder and rules (cost_model_internal.h).
#include <algorithm>
#include <cmath>
#include <optional>

#include "graph/cost_model_internal.h"
#include "graph/gradient_buckets.h"
#include "oneflow_lite/core/checked_math.h"
#include "search/collective_time.h"

namespace ofl::internal {

double GiB(int64_t bytes) {
  return std::round(static_cast<double>(bytes) / static_cast<double>(int64_t{1} << 30) * 1000.0) /
         1000.0;
}

int64_t MemoryLimit(const Cluster& cluster, const CostOptions& options) {
  return options.memory_limit_bytes > 0 ? options.memory_limit_bytes : cluster.memory_bytes();
}

int64_t LargestSliceElements(const Shape& shape, const Shape& hierarchy, const NdSbp& nd_sbp) {
  std::vector<int64_t> dims = shape.dims();
  for (int64_t a = 0; a < nd_sbp.size(); ++a) {
    if (!nd_sbp[a].is_split()) continue;
    int64_t& d = dims[nd_sbp[a].axis()];
    d = (d + hierarchy[a] - 1) / hierarchy[a];
  }
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

double BusiestShare(const NdSbpSignature& signature, const std::vector<TensorDesc>& inputs,
                    const std::vector<TensorDesc>& outputs, const Shape& hierarchy) {
  double share = 1.0;
  for (int64_t a = 0; a < hierarchy.ndim(); ++a) {
    // The reference tensor: the first output split on axis a, else the first input.
    const TensorDesc* ref = nullptr;
    const NdSbp* ref_sbp = nullptr;
    for (size_t o = 0; o < outputs.size() && ref == nullptr; ++o) {
      if (signature.outputs[o][a].is_split()) {
        ref = &outputs[o];
        ref_sbp = &signature.outputs[o];
      }
    }
    for (size_t i = 0; i < inputs.size() && ref == nullptr; ++i) {
      if (signature.inputs[i][a].is_split()) {
        ref = &inputs[i];
        ref_sbp = &signature.inputs[i];
      }
    }
    if (ref == nullptr) continue;  // B and P only: redundant full work
    const int64_t d = (*ref_sbp)[a].axis();
    int64_t size = ref->shape[d];
    for (int64_t b = 0; b < a; ++b) {  // outer splits of the same dimension, largest parts
      if ((*ref_sbp)[b].is_split() && (*ref_sbp)[b].axis() == d) {
        size = (size + hierarchy[b] - 1) / hierarchy[b];
      }
    }
    if (size <= 0) {
      share /= static_cast<double>(hierarchy[a]);
      continue;
    }
    const int64_t largest = (size + hierarchy[a] - 1) / hierarchy[a];
    share *= static_cast<double>(largest) / static_cast<double>(size);
  }
  return share;
}

std::vector<NdSbp> SourceSbps(const Shape& shape, const Shape& hierarchy) {
  std::vector<Sbp> one_axis = {Sbp::Broadcast()};
  for (int64_t d = 0; d < shape.ndim(); ++d) one_axis.push_back(Sbp::Split(d));
  std::vector<std::vector<Sbp>> out = {{}};
  for (int64_t a = 0; a < hierarchy.ndim(); ++a) {
    std::vector<std::vector<Sbp>> next;
    for (const auto& prefix : out) {
      for (const Sbp& s : one_axis) {
        next.push_back(prefix);
        next.back().push_back(s);
      }
    }
    out = std::move(next);
  }
  std::vector<NdSbp> result;
  for (auto& axes : out) result.emplace_back(std::move(axes));
  return result;
}

int SpanLevel(const Cluster& cluster, const std::vector<int64_t>& ranks) {
  for (int l = 0; l < cluster.num_levels(); ++l) {
    const int64_t size = cluster.level(l).size;
    if (size == 0) return l;
    bool one_group = true;
    for (int64_t r : ranks) one_group = one_group && r / size == ranks.front() / size;
    if (one_group) return l;
  }
  return cluster.num_levels() - 1;
}

double BucketedSeconds(CollectiveKind kind, double bytes, double buffer_bytes, int64_t bucket_bytes,
                       int64_t group_size, const LinkLevel& level) {
  if (bytes <= 0 || group_size <= 1) return 0.0;
  const double share = std::min(1.0, buffer_bytes / static_cast<double>(bucket_bytes));
  if (share > 0) {
    if (std::optional<double> bucket = TableSeconds(kind, bytes / share, group_size, level)) {
      return share * *bucket;
    }
  }
  const CollectiveFigure figure = FigureOf(kind, level);
  return figure.latency_s * static_cast<double>(CollectiveSteps(kind, group_size)) * share +
         bytes / figure.bandwidth_bytes_per_s;
}

Maybe<double> BoxingCostSeconds(const Cluster& cluster, const Placement& from_placement,
                                const Placement& to_placement, const BoxingCost& cost,
                                const TensorDesc* bucketed, int64_t bucket_bytes) {
  using Conf = proto::BoxingConf;
  double seconds = 0;
  std::optional<std::vector<int>> levels;  // of the source hierarchy's axes
  for (const BoxingStepCost& step : cost.steps) {
    CollectiveKind kind;
    switch (step.kind) {
      case Conf::ALL_REDUCE:
        kind = CollectiveKind::kAllReduce;
        break;
      case Conf::REDUCE_SCATTER:
        kind = CollectiveKind::kReduceScatter;
        break;
      case Conf::ALL_GATHER:
        kind = CollectiveKind::kAllGather;
        break;
      case Conf::ALL_TO_ALL:
        kind = CollectiveKind::kAllToAll;
        break;
      case Conf::SEND_RECV:
        kind = CollectiveKind::kSendRecv;
        break;
      default:
        continue;  // local steps move nothing
    }
    const double bytes = static_cast<double>(step.max_bytes);
    if (step.hierarchy_axis >= 0) {
      const Shape& h = from_placement.hierarchy();
      if (!levels) {
        OFL_ASSIGN_OR_RETURN(levels, cluster.AxisLevels(h.dims()));
      }
      const LinkLevel& level = cluster.level((*levels)[step.hierarchy_axis]);
      const bool fused =
          bucketed != nullptr && bucket_bytes > 0 &&
          (kind == CollectiveKind::kAllReduce || kind == CollectiveKind::kReduceScatter);
      if (fused) {
        // A bucket fills by whole gradients; each step runs once per bucket.
        const double buffer = static_cast<double>(bucketed->shape.NumElements()) *
                              static_cast<double>(SizeOf(bucketed->dtype));
        seconds +=
            BucketedSeconds(kind, bytes, buffer, bucket_bytes, h[step.hierarchy_axis], level);
      } else {
        seconds += CollectiveSeconds(kind, bytes, h[step.hierarchy_axis], level);
      }
    } else {  // the union of both placements' ranks
      std::vector<int64_t> ranks = from_placement.ranks();
      if (to_placement != from_placement) {
        ranks.insert(ranks.end(), to_placement.ranks().begin(), to_placement.ranks().end());
        std::sort(ranks.begin(), ranks.end());
        ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
      }
      seconds += CollectiveSeconds(kind, bytes, static_cast<int64_t>(ranks.size()),
                                   cluster.level(SpanLevel(cluster, ranks)));
    }
  }
  return seconds;
}

Maybe<double> BoxingPlanSeconds(const Cluster& cluster, const BoxingPlan& plan) {
  return BoxingCostSeconds(cluster, plan.from_placement, plan.to_placement, CostOf(plan));
}

TensorDesc Builder::Costed(const TensorDesc& desc) const {
  TensorDesc out = desc;
  if (options_.compute_dtype && IsFloating(desc.dtype)) out.dtype = *options_.compute_dtype;
  return out;
}

int Builder::PlacementId(const Placement& placement) {
  for (size_t i = 0; i < placement_list_.size(); ++i) {
    if (placement_list_[i] == placement) return static_cast<int>(i);
  }
  placement_list_.push_back(placement);
  return static_cast<int>(placement_list_.size()) - 1;
}

Maybe<double> Builder::FlopsPerSecond(DataType dtype) {
  DataType dt = options_.compute_dtype.value_or(dtype);
  if (!IsFloating(dt)) dt = DataType::kFloat32;
  auto it = flops_.find(dt);
  if (it != flops_.end()) return it->second;
  Maybe<double> f = cluster_.Flops(dt);
  if (!f.ok() && dt == DataType::kBFloat16) f = cluster_.Flops(DataType::kFloat32);
  if (!f.ok()) return f.status();
  flops_[dt] = f.value();
  return f.value();
}

Maybe<Builder::OpWork> Builder::WorkOf(const OpNode& op, std::optional<DataType> dtype) {
  OpWork work;
  work.ctx = graph_.ContextOf(op);
  for (const std::string& o : op.outputs) work.outs.push_back(graph_.Desc(o).value());
  work.flops = OpRegistry::Find(op.type).value()->EstimateCost(work.ctx, work.outs).flops;
  if (work.flops > 0) {
    DataType dt = work.outs.empty() ? work.ctx.input(0).dtype : work.outs[0].dtype;
    for (const TensorDesc& in : work.ctx.inputs) {
      if (in.dtype == DataType::kBFloat16) dt = DataType::kBFloat16;  // bf16 operands
    }
    if (dtype) dt = *dtype;
    OFL_ASSIGN_OR_RETURN(work.per_second, FlopsPerSecond(dt));
    work.dtype = options_.compute_dtype.value_or(dt);
    if (!IsFloating(work.dtype)) work.dtype = DataType::kFloat32;
  }
  return work;
}

double Builder::ComputeSeconds(const std::string& op_type, const OpWork& work, double flops,
                               int64_t multiplier, const Placement& placement) {
  if (!(flops > 0)) return 0.0;
  const ComputeTable& table = cluster_.compute_table();
  // No contention measured (the presets): factor 1, without naming the placement.
  const bool contended = cluster_.proto().device().contention_size() > 0;
  const std::string key = contended ? placement.ToString() : std::string();
  auto c = contention_.find(key);
  if (c == contention_.end()) {
    // Devices are numbered group by group: count the placement's ranks per
    // innermost group (all of them when that level has no limit).
    const int64_t group = cluster_.level(0).size;
    std::map<int64_t, int64_t> per_group;
    int64_t busiest = 0;
    for (int64_t r : placement.ranks()) {
      busiest = std::max(busiest, ++per_group[group > 0 ? r / group : 0]);
    }
    c = contention_.emplace(key, contended ? table.Contention(busiest) : 1.0).first;
  }
  const std::optional<double> measured = table.Seconds(op_type, work.dtype, flops);
  if (measured) return static_cast<double>(multiplier) * *measured * c->second;
  if (!table.empty()) untabled_.insert(op_type);
  return static_cast<double>(multiplier) * flops / work.per_second * c->second;
}

Maybe<double> Builder::CachedBoxingSeconds(const TensorDesc& desc, int from_placement,
                                           const NdSbp& from, int to_placement, const NdSbp& to,
                                           const std::string& name, bool gradient) {
  if (from_placement == to_placement && from == to) return 0.0;
  std::vector<int64_t> key_desc = desc.shape.dims();
  key_desc.push_back(static_cast<int64_t>(desc.dtype));
  key_desc.push_back(gradient ? 1 : 0);
  BoxKey key{std::move(key_desc), from_placement, from, to_placement, to};
  auto it = box_cache_.find(key);
  if (it != box_cache_.end()) return it->second;
  const Placement& fp = placement_list_[from_placement];
  const Placement& tp = placement_list_[to_placement];
  OFL_ASSIGN_OR_RETURN(BoxingCost cost,
                       PlanBoxingCost(desc, fp, from, tp, to, name, &boxing_cost_cache_));
  ++boxing_plans_;
  // Only what the runtime fuses shares a bucket's latency.
  const bool bucketed =
      gradient && from_placement == to_placement &&
      FusedIntoBuckets(desc, placement_list_[from_placement].hierarchy(), from, to);
  OFL_ASSIGN_OR_RETURN(double seconds,
                       BoxingCostSeconds(cluster_, fp, tp, cost, bucketed ? &desc : nullptr,
                                         options_.gradient_bucket_bytes));
  box_cache_.emplace(std::move(key), seconds);
  return seconds;
}

Maybe<EdgeMatrixPtr> Builder::Matrix(const CostEdgeInfo& edge, const CostNodeInfo& producer,
                                     const CostNodeInfo& consumer,
                                     const std::vector<double>* overlap) {
  const int rows = static_cast<int>(producer.kind == CostNodeKind::kOp ? producer.signatures.size()
                                                                       : producer.sbps.size());
  const int cols = static_cast<int>(consumer.signatures.size());
  std::vector<NdSbp> produced, wanted;
  produced.reserve(rows);
  wanted.reserve(cols);
  for (int r = 0; r < rows; ++r) {
    produced.push_back(producer.kind == CostNodeKind::kOp
                           ? producer.signatures[r].outputs[edge.output_index]
                           : producer.sbps[r]);
  }
  for (int c = 0; c < cols; ++c) wanted.push_back(consumer.signatures[c].inputs[edge.input_index]);
  auto intern = [&](std::vector<NdSbp> list) {
    auto it = sbp_lists_.emplace(std::move(list), static_cast<int>(sbp_lists_.size())).first;
    return it->second;
  };
  const int from_pl = PlacementId(producer.placement);
  const int to_pl = PlacementId(consumer.placement);
  std::vector<int64_t> key_desc = edge.desc.shape.dims();
  key_desc.push_back(static_cast<int64_t>(edge.desc.dtype));
  // Gradient edges key on their discounts (identical layers share them);
  // {-1} marks every other edge (a discount is never negative).
  const bool gradient = overlap != nullptr;
  MatrixKey key{key_desc,
                from_pl,
                to_pl,
                intern(produced),
                intern(wanted),
                edge.multiplier,
                gradient ? *overlap : std::vector<double>{-1.0}};
  auto it = matrix_cache_.find(key);
  if (it != matrix_cache_.end()) return it->second;
  std::vector<double> seconds(static_cast<size_t>(rows) * cols);
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < cols; ++c) {
      OFL_ASSIGN_OR_RETURN(double s, CachedBoxingSeconds(edge.desc, from_pl, produced[r], to_pl,
                                                         wanted[c], edge.tensor, gradient));
      if (gradient && !overlap->empty()) s = std::max(0.0, s - (*overlap)[r]);
      seconds[static_cast<size_t>(r) * cols + c] = s * static_cast<double>(edge.multiplier);
    }
  }
  OFL_ASSIGN_OR_RETURN(EdgeMatrixPtr m, EdgeMatrix::Create(rows, cols, std::move(seconds)));
  matrix_cache_.emplace(std::move(key), m);
  return m;
}

}  // namespace ofl::internal
