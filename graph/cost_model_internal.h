// Internal to the cost model (cost_model.h): the builder that turns an
// OpGraph into cost nodes and edges, its caches, and the shared rules
// (busiest rank's share of work and bytes, seconds of a boxing plan).
// Exposed only for cost_model*.cpp, strategy_report.cpp (the undo bytes)
// and tests. Not synchronised: one Builder per build.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "graph/boxing_cost.h"
#include "graph/cost_model.h"
#include "search/collective_time.h"

namespace ofl::internal {

double GiB(int64_t bytes);  // bytes / 2^30, rounded to 3 decimals

// The per-device memory limit the model is built for: the option, else the cluster's.
int64_t MemoryLimit(const Cluster& cluster, const CostOptions& options);

// Elements of the largest slice of `shape` under `nd_sbp` on `hierarchy`
// (balanced splits: rank (0, ..., 0) holds the largest part of every axis).
int64_t LargestSliceElements(const Shape& shape, const Shape& hierarchy, const NdSbp& nd_sbp);

// The busiest rank's share of an op's work under `signature` (cost_model.h).
double BusiestShare(const NdSbpSignature& signature, const std::vector<TensorDesc>& inputs,
                    const std::vector<TensorDesc>& outputs, const Shape& hierarchy);

// Every NdSbp a source may take on `hierarchy`: S(d) for each tensor axis
// or B on every hierarchy axis (no P: a fed tensor or variable holds values).
std::vector<NdSbp> SourceSbps(const Shape& shape, const Shape& hierarchy);

// The slowest level the ranks span (devices numbered group by group).
int SpanLevel(const Cluster& cluster, const std::vector<int64_t>& ranks);

// Seconds of a boxing from `from_placement` to `to_placement` on `cluster`
// (one execution; each step charged by CollectiveSeconds with its busiest
// rank's bytes: axis steps on their axis's groups and level, SEND_RECV on
// the union of both placements' ranks and the slowest level they span).
// With `bucketed` (a gradient's desc, as costed; callers pass it only for a
// gradient the runtime fuses, gradient_buckets.h FusedIntoBuckets) and
// bucket_bytes > 0, its ALL_REDUCE and REDUCE_SCATTER axis steps take the
// bucketing proxy of cost_model.h (BucketedSeconds), with the whole
// gradient as its share of the bucket.
Maybe<double> BoxingCostSeconds(const Cluster& cluster, const Placement& from_placement,
                                const Placement& to_placement, const BoxingCost& cost,
                                const TensorDesc* bucketed = nullptr, int64_t bucket_bytes = 0);

// One collective's share of a bucket: latency x steps x min(1, buffer_bytes
// / bucket_bytes) + bytes / bandwidth; 0 for no bytes or one rank. Where the
// level has measured points for the kind and group size (collective_time.h
// TableSeconds), the share of the bucket's own time instead: share x
// table(bytes / share), share = min(1, buffer_bytes / bucket_bytes).
double BucketedSeconds(CollectiveKind kind, double bytes, double buffer_bytes, int64_t bucket_bytes,
                       int64_t group_size, const LinkLevel& level);

// The same for a plan that visited every rank (BoxingCostSeconds of CostOf(plan)).
Maybe<double> BoxingPlanSeconds(const Cluster& cluster, const BoxingPlan& plan);

class Builder {
 public:
  // What an op costs before a signature is chosen: its context, outputs,
  // whole FLOPs and the FLOP/s they run at (1 when it has no FLOPs).
  struct OpWork {
    OpContext ctx;
    std::vector<TensorDesc> outs;
    double flops = 0;
    double per_second = 1.0;
    DataType dtype = DataType::kFloat32;  // the compute dtype it is priced in
  };

  Builder(const OpGraph& graph, const Strategy& placements, const Cluster& cluster,
          const CostOptions& options)
      : graph_(graph), placements_(placements), cluster_(cluster), options_(options) {}

  Status Run(CostGraph* cost_graph, std::vector<CostNodeInfo>* nodes,
             std::vector<CostEdgeInfo>* edges, Strategy* placements_out, CostModelStats* stats);

  // Memory of a candidate is a byte count that may exceed int64 for absurd
  // models (it saturates at INT64_MAX). The sum of each node's smallest
  // candidate, exact (INT64_MAX when more than int64 can hold), and each
  // node's smallest candidate (bytes, node index), in node order: for the
  // infeasible-memory error. The CostGraph gets every candidate capped at
  // its node's smallest + (INT64_MAX - that sum) / nodes, so no sum of one
  // candidate per node wraps in any searcher; values are exact unless a
  // model's memory comes near 8 EiB per device.
  int64_t smallest_memory_need() const { return smallest_need_; }
  const std::vector<std::pair<int64_t, int>>& node_needs() const { return node_needs_; }

 private:
  TensorDesc Costed(const TensorDesc& desc) const;
  int PlacementId(const Placement& placement);
  Maybe<double> FlopsPerSecond(DataType dtype);
  // `dtype`: the FLOP/s figure to use; unset: bfloat16 when a floating input
  // is, else the op's first output's dtype (its first input's when it has
  // no output).
  Maybe<OpWork> WorkOf(const OpNode& op, std::optional<DataType> dtype = std::nullopt);
  // Seconds of `multiplier` executions of `flops` FLOPs (the busiest rank's)
  // of `op_type` on a device of `placement`: the cluster's compute table
  // where it lists (op_type, work.dtype), else flops / work.per_second (op
  // types priced so while the cluster has a table are kept for the stats);
  // times the cluster's contention factor for the devices of `placement`
  // that share one innermost-level group (a host's cores).
  double ComputeSeconds(const std::string& op_type, const OpWork& work, double flops,
                        int64_t multiplier, const Placement& placement);
  // `gradient`: a gradient's collective, priced by the bucketing proxy.
  Maybe<double> CachedBoxingSeconds(const TensorDesc& desc, int from_placement, const NdSbp& from,
                                    int to_placement, const NdSbp& to, const std::string& name,
                                    bool gradient = false);
  // `overlap`: a gradient edge; per producer candidate, the seconds its
  // entries are discounted by (empty: none).
  Maybe<EdgeMatrixPtr> Matrix(const CostEdgeInfo& edge, const CostNodeInfo& producer,
                              const CostNodeInfo& consumer,
                              const std::vector<double>* overlap = nullptr);
  // The layout input `input` arrives in (CostOptions::input_arrival, else
  // S(0) on every axis; 0-d: B). Errors: an arrival the input cannot take.
  Maybe<NdSbp> ArrivalOf(const std::string& input, const TensorDesc& desc,
                         const Placement& placement) const;
  Status AddSources(CostGraph* g, std::vector<CostNodeInfo>* nodes);
  Status AddInputNode(CostGraph* g, std::vector<CostNodeInfo>* nodes, const std::string& name);
  // A variable's node; `update`: the op that updates it in place (its
  // candidates are then that op's signatures), or null.
  Status AddVariableNode(CostGraph* g, std::vector<CostNodeInfo>* nodes, const std::string& name,
                         const OpNode* update);
  Status AddUpdateCandidates(const OpNode& op, const VariableInfo& var,
                             const std::function<int64_t(const NdSbp&)>& memory, CostNodeInfo* info,
                             std::vector<Candidate>* candidates);
  Status AddOps(CostGraph* g, std::vector<CostNodeInfo>* nodes);
  Status AddEdges(CostGraph* g, const std::vector<CostNodeInfo>& nodes,
                  std::vector<CostEdgeInfo>* edges);
  // Appends the node's info; its candidates wait for AddPendingNodes, which
  // caps their memory (see smallest_memory_need) and adds them to `g`.
  Status AddNode(CostGraph* g, std::vector<CostNodeInfo>* nodes, CostNodeInfo info,
                 std::vector<Candidate> candidates);
  Status AddPendingNodes(CostGraph* g, const std::vector<CostNodeInfo>& nodes);

  const OpGraph& graph_;
  const Strategy& placements_;
  const Cluster& cluster_;
  const CostOptions& options_;
  std::vector<Placement> placement_list_;
  std::map<DataType, double> flops_;
  // tensor -> (node, output index) for op outputs and sources.
  std::map<std::string, std::pair<int, int>> producer_of_;
  std::map<std::string, std::string> update_of_;  // written variable -> update op
  std::map<std::string, int> node_of_;            // op or source -> node
  using BoxKey = std::tuple<std::vector<int64_t>, int, NdSbp, int, NdSbp>;
  std::map<BoxKey, double> box_cache_;
  BoxingCostCache boxing_cost_cache_;  // what PlanBoxingCost shares across conversions
  std::map<std::vector<NdSbp>, int> sbp_lists_;
  using MatrixKey =
      std::tuple<std::vector<int64_t>, int, int, int, int, int64_t, std::vector<double>>;
  std::map<MatrixKey, EdgeMatrixPtr> matrix_cache_;
  int64_t boxing_plans_ = 0;
  int64_t smallest_need_ = 0;
  std::vector<std::pair<int64_t, int>> node_needs_;
  std::vector<std::vector<Candidate>> pending_;  // per node, until AddPendingNodes
  std::map<std::string, double> contention_;     // placement text -> factor
  std::set<std::string> untabled_;               // op types priced by FLOP/s beside a table
};

}  // namespace ofl::internal
