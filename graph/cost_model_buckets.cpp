// The full step-time model with gradient buckets (cost_model_buckets.h).
#include "graph/cost_model_buckets.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <tuple>
#include <utility>

#include "graph/cost_model_internal.h"
#include "graph/gradient_buckets.h"
#include "oneflow_lite/core/checked_math.h"
#include "search/collective_time.h"

namespace ofl {

namespace {

bool IsBackward(const CostNodeInfo& n) {
  return n.kind == CostNodeKind::kOp && n.name.rfind("grad/", 0) == 0;
}

// Per node, when the last micro-batch's backward has finished it (0 for
// nodes outside backward), and B, the end of that backward.
std::pair<std::vector<double>, double> BackwardTimeline(const CostModel& model,
                                                        const Solution& solution) {
  const int n = model.graph().num_nodes();
  std::vector<double> incoming(n, 0.0);
  for (int e = 0; e < model.graph().num_edges(); ++e) {
    if (IsGradientEdge(model, e)) continue;
    const CostEdgeInfo& info = model.edges()[e];
    incoming[info.consumer] += solution.edge_seconds[e] / static_cast<double>(info.multiplier);
  }
  std::vector<double> ready(n, 0.0);
  double t = 0;
  for (int u = 0; u < n; ++u) {
    const CostNodeInfo& info = model.nodes()[u];
    if (!IsBackward(info)) continue;
    t += incoming[u] + solution.node_seconds[u] / static_cast<double>(info.multiplier);
    ready[u] = t;
  }
  return {std::move(ready), t};
}

// Gradients fuse as the runtime fuses them (gradient_buckets.h): one bucket
// per placement, produced and wanted NdSbp and dtype; within it, one per
// step (kind, mesh axis) of that one conversion.
struct BucketKey {
  int kind;
  int64_t axis;
  std::string group;  // placement, NdSbps, dtype
  bool operator<(const BucketKey& o) const {
    return std::tie(kind, axis, group) < std::tie(o.kind, o.axis, o.group);
  }
};

// Fills buckets from the gradient edges in order of readiness.
class Bucketer {
 public:
  explicit Bucketer(const CostModel& model) : model_(model) {}

  Status Add(int edge, const std::vector<int>& choice, double ready) {
    const CostEdgeInfo& e = model_.edges()[edge];
    const Placement& from = model_.nodes()[e.producer].placement;
    const Placement& to = model_.nodes()[e.consumer].placement;
    const NdSbp& produced = model_.ProducedSbp(edge, choice[e.producer]);
    const NdSbp& wanted = model_.WantedSbp(edge, choice[e.consumer]);
    OFL_ASSIGN_OR_RETURN(BoxingCost cost,
                         PlanBoxingCost(e.desc, from, produced, to, wanted, e.tensor));
    const int64_t cap = model_.options().gradient_bucket_bytes;
    // What the runtime fuses: every step of the conversion runs once per bucket.
    const bool runtime_fuses =
        cap > 0 && from == to && FusedIntoBuckets(e.desc, from.hierarchy(), produced, wanted);
    const std::string group =
        from.ToString() + produced.ToString() + wanted.ToString() + DataTypeName(e.desc.dtype);
    for (const BoxingStepCost& step : cost.steps) {
      const bool fusable = runtime_fuses && step.hierarchy_axis >= 0 &&
                           (step.kind == proto::BoxingConf::ALL_REDUCE ||
                            step.kind == proto::BoxingConf::REDUCE_SCATTER);
      if (!fusable) {
        OFL_RETURN_IF_ERROR(AddAlone(e, from, to, step, ready));
        continue;
      }
      BucketKey key{static_cast<int>(step.kind), step.hierarchy_axis, group};
      auto it = open_.find(key);
      if (it == open_.end()) {
        OFL_ASSIGN_OR_RETURN(std::vector<int> levels,
                             model_.cluster().AxisLevels(from.hierarchy().dims()));
        GradientBucket b;
        b.level = model_.cluster().level(levels[step.hierarchy_axis]).name;
        level_of_[key] = levels[step.hierarchy_axis];
        b.collective = CollectiveKindName(step.kind == proto::BoxingConf::ALL_REDUCE
                                              ? CollectiveKind::kAllReduce
                                              : CollectiveKind::kReduceScatter);
        b.hierarchy_axis = step.hierarchy_axis;
        b.group_size = from.hierarchy()[step.hierarchy_axis];
        it = open_.emplace(std::move(key), std::move(b)).first;
      }
      GradientBucket& b = it->second;
      // The runtime fills a bucket by whole gradients (its P register), and
      // every step of the bucket's boxing runs once per bucket.
      const int64_t buffer = SaturatingMul(e.desc.shape.NumElements(), SizeOf(e.desc.dtype));
      b.buffer_bytes = SaturatingAdd(b.buffer_bytes, buffer);
      b.sent_bytes = SaturatingAdd(b.sent_bytes, step.max_bytes);
      b.gradients.push_back(e.tensor);
      b.ready_s = std::max(b.ready_s, ready);
      if (b.buffer_bytes >= cap) Close(it);
    }
    return Status::OK();
  }

  // Closes the open buckets and returns every bucket in launch order.
  std::vector<GradientBucket> Finish() {
    while (!open_.empty()) {
      auto first = std::min_element(open_.begin(), open_.end(), [](const auto& a, const auto& b) {
        return a.second.ready_s < b.second.ready_s;
      });
      Close(first);
    }
    std::stable_sort(
        closed_.begin(), closed_.end(),
        [](const GradientBucket& a, const GradientBucket& b) { return a.ready_s < b.ready_s; });
    return std::move(closed_);
  }

 private:
  void Close(std::map<BucketKey, GradientBucket>::iterator it) {
    GradientBucket& b = it->second;
    const CollectiveKind kind = b.collective == CollectiveKindName(CollectiveKind::kAllReduce)
                                    ? CollectiveKind::kAllReduce
                                    : CollectiveKind::kReduceScatter;
    b.seconds = CollectiveSeconds(kind, static_cast<double>(b.sent_bytes), b.group_size,
                                  model_.cluster().level(level_of_.at(it->first)));
    closed_.push_back(std::move(b));
    open_.erase(it);
  }

  Status AddAlone(const CostEdgeInfo& e, const Placement& from, const Placement& to,
                  const BoxingStepCost& step, double ready) {
    BoxingCost one;
    one.steps.push_back(step);
    OFL_ASSIGN_OR_RETURN(double seconds,
                         internal::BoxingCostSeconds(model_.cluster(), from, to, one));
    if (seconds <= 0) return Status::OK();
    GradientBucket b;
    b.collective = proto::BoxingConf::Kind_Name(step.kind);
    std::transform(b.collective.begin(), b.collective.end(), b.collective.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    b.hierarchy_axis = step.hierarchy_axis;
    b.group_size = step.hierarchy_axis >= 0 ? from.hierarchy()[step.hierarchy_axis] : 0;
    b.sent_bytes = step.max_bytes;
    b.gradients.push_back(e.tensor);
    b.ready_s = ready;
    b.seconds = seconds;
    closed_.push_back(std::move(b));
    return Status::OK();
  }

  const CostModel& model_;
  std::map<BucketKey, GradientBucket> open_;
  std::map<BucketKey, int> level_of_;  // the cluster level of each key's groups
  std::vector<GradientBucket> closed_;
};

}  // namespace

bool IsGradientEdge(const CostModel& model, int edge) {
  const CostEdgeInfo& e = model.edges()[edge];
  const CostNodeInfo& consumer = model.nodes()[e.consumer];
  return consumer.kind == CostNodeKind::kVariable && !consumer.update_op.empty() &&
         model.nodes()[e.producer].kind == CostNodeKind::kOp;
}

Maybe<StepEstimate> EstimateStep(const CostModel& model, const std::vector<int>& choice) {
  OFL_ASSIGN_OR_RETURN(Solution solution, model.graph().Evaluate(choice));
  StepEstimate out;
  out.proxy_total_s = solution.total_seconds;
  out.compute_s = solution.compute_seconds;
  // Named, not a structured binding: C++17 lambdas cannot capture those (clang).
  auto timeline = BackwardTimeline(model, solution);
  const auto& ready = timeline.first;
  const double backward_end = timeline.second;
  out.backward_s = backward_end;
  std::vector<int> gradient_edges;
  for (int e = 0; e < model.graph().num_edges(); ++e) {
    if (IsGradientEdge(model, e)) {
      gradient_edges.push_back(e);
    } else {
      out.transfer_s += solution.edge_seconds[e];
    }
  }
  // Ties (gradients made outside backward, e.g. clipped ones) in the order
  // of their producers, as the runtime fills buckets.
  std::stable_sort(gradient_edges.begin(), gradient_edges.end(), [&](int a, int b) {
    const int pa = model.edges()[a].producer;
    const int pb = model.edges()[b].producer;
    return std::tie(ready[pa], pa) < std::tie(ready[pb], pb);
  });
  Bucketer bucketer(model);
  for (int e : gradient_edges) {
    OFL_RETURN_IF_ERROR(bucketer.Add(e, choice, ready[model.edges()[e].producer]));
  }
  out.buckets = bucketer.Finish();
  double end = model.options().overlap_gradients ? 0.0 : backward_end;
  for (GradientBucket& b : out.buckets) {
    b.start_s = std::max(end, b.ready_s);
    end = b.start_s + b.seconds;
    out.gradient_s += b.seconds;
  }
  out.exposed_gradient_s = std::max(0.0, end - backward_end);
  out.total_s = out.compute_s + out.transfer_s + out.exposed_gradient_s;
  return out;
}

}  // namespace ofl
