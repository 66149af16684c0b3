// Cost model: builds search/'s abstract CostGraph from an OpGraph, the
// placements of a Strategy and a Cluster (DESIGN.md sections 5, 6), and keeps
// the map back from cost nodes and candidates to ops, sources and SBP. A
// CostModel is an immutable value once built; const methods are thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "graph/boxing.h"
#include "graph/op_graph.h"
#include "graph/strategy.h"
#include "search/cluster.h"
#include "search/cost_graph.h"

// Nodes, in graph order: every fed input, every variable not written in
// place as optimizer state, then every op except optimizer updates. A
// trainable variable written in place by an update op is ONE node with the
// update folded in: its candidates are the update's signatures whose
// parameter NdSbp has no P and whose state inputs follow the parameter (same
// shape: same NdSbp; else B), so a choice always gives Strategy::Validate a
// consistent variable/update pair. Its state variables ("<var>/m", ...) get
// no node.
//
// Units: seconds, bytes per device. Rules (all per step, a plain sum (see
// search/cost_graph.h); overlap enters only as the gradient edges' proxy):
//  - Compute of an op candidate = multiplier x the seconds of the busiest
//    rank's FLOPs x the cluster's contention factor (devices of the op's
//    placement in one innermost-level group, ComputeTable::Contention; 1
//    without a calibration). The seconds: the cluster's compute table
//    interpolated at those FLOPs (search/compute_table.h) where it lists
//    the op type and compute dtype, else FLOPs / the cluster's FLOP/s for
//    the compute dtype. The compute dtype: options.compute_dtype, else
//    bfloat16 when a floating input is bfloat16 (mixed precision: a bf16
//    matmul writes float32 but multiplies bf16 operands), else the op's first
//    output dtype (first input when it has none); non-floating dtypes use
//    float32's figure, and bfloat16 uses float32's when the cluster gives
//    none for it (its kernels then widen to float32); stats().untabled_op_types
//    lists the op types priced by FLOP/s beside a table. FLOPs of the busiest rank = the op's
//    logical FLOPs (OpDef::EstimateCost) x the product over hierarchy axes of
//    that axis's largest share: on an axis where some output (else input) of
//    the signature is S(d), the reference tensor is the first such output
//    (else input), and the share is the largest balanced part of dimension d
//    (after the outer axes' splits of d, largest parts) over that size; an
//    axis with only B and P does the full work redundantly (share 1).
//  - Edge matrix entry (producer candidate, consumer candidate) = multiplier
//    x the seconds of PlanBoxing(tensor, produced NdSbp, wanted NdSbp) with
//    every step charged as CollectiveSeconds(kind, the busiest rank's bytes
//    of that step, group size, level): axis steps on the hierarchy axis's
//    group and Cluster::AxisLevels level; SEND_RECV (general fallback and
//    cross-placement) on the slowest level the union of both placements'
//    ranks spans, group size = that union's size. Local steps cost 0. The
//    N-D conversion is planned as a whole, never one axis at a time.
//  - Gradient edges (a backward op's output into a folded update: the
//    gradient's all-reduce or reduce-scatter) use an additive proxy of
//    bucketing and overlap (options.gradient_bucket_bytes > 0). When the
//    runtime fuses the gradient into a bucket (gradient_buckets.h
//    FusedIntoBuckets: same placement, P and B axes -> all B, or -> all
//    S(0) with rows divisible by the ranks), each of its ALL_REDUCE and
//    REDUCE_SCATTER axis steps costs
//      latency x steps(kind, p) x min(1, buffer / bucket) + bytes / bandwidth
//    (the bucket's one latency spread over its bytes; buffer = the whole
//    gradient's bytes, as the runtime fills buckets, bytes = what it sends);
//    other steps, and the gradients the runtime boxes alone (uneven
//    reduce-scatters, gradients split on some axis), as above. With options.overlap_gradients the
//    entry is then max(0, that - the producer candidate's compute seconds for one execution): as
//    much backward compute as produced the gradient follows it and hides it. The full model
//    (cost_model_buckets.h: real buckets in order of readiness, one serial communication stream,
//    exposure past the end of backward) prices a chosen plan for reports and benches.
//  - Feeding a fed input: its candidate's "compute" is multiplier x (its
//    slice bytes / the innermost level's bandwidth (a stand-in for the host
//    link, which the Cluster does not describe) + the seconds of the boxing
//    from the layout it arrives in to the candidate's): every rank reads its
//    slice and fetches what it lacks. Inputs arrive as
//    options.input_arrival says, else S(0) on every mesh axis (split over
//    the data-parallel axes; 0-d inputs B). Variables cost nothing to hold.
//  - Multiplier: options.micro_batches for forward and backward ops, fed
//    inputs and the edges into them; 1 for a variable's folded update and
//    the (accumulated) gradient edges into it.
//  - Memory of a candidate (per device, the busiest rank): forward op ->
//    bytes of its output slices (kept for backward, one micro-batch);
//    backward op -> 0 (transient; gradients of weights are counted with the
//    weight); fed input -> its slice; trainable variable -> bytes_per_parameter
//    x its slice's elements (default 4 x sizeof(dtype) = weight + gradient +
//    two Adam moments; state variables and gradients are not counted again);
//    non-trainable variable -> its slice bytes.
//  - Bytes: floating tensors use options.compute_dtype's size when set.
//    Byte counts of absurd models may pass int64: boxing bytes and candidate
//    memory saturate at INT64_MAX (never wrap); a smallest need past int64
//    is infeasible even without a limit; candidates reach the CostGraph
//    capped so that no searcher's sum wraps (cost_model_internal.h).
// Caches: one boxing cost per distinct (tensor desc, placements, NdSbps);
// one EdgeMatrix per distinct (desc, placements, candidate NdSbp lists,
// multiplier), so identical layers share one matrix and still choose apart.
// A CostModel is an immutable value once built; const methods are thread-safe.

namespace ofl {

struct CostOptions {
  int64_t micro_batches = 1;              // >= 1
  std::optional<DataType> compute_dtype;  // overrides floating tensors' dtype
  double bytes_per_parameter = 0;         // 0: 4 x sizeof(dtype)
  int64_t memory_limit_bytes = 0;         // 0: the cluster's memory; kNoMemoryLimit: none
  // Gradient collectives fuse into buckets of this many bytes of each rank's
  // gradient buffer (PyTorch DDP's bucket_cap_mb); 0: each its own collective.
  int64_t gradient_bucket_bytes = int64_t{25} << 20;
  // Gradient collectives overlap the rest of backward.
  bool overlap_gradients = true;
  // Fed input -> the NdSbp it arrives in (default: S(0) on every mesh axis;
  // 0-d inputs B). Pinned inputs arrive as pinned (ArrivalsFromPins).
  std::map<std::string, NdSbp> input_arrival;
};

// `options` with every pinned fed input of `graph` arriving as pinned
// (entries already in options.input_arrival stay; a pin with P or a split
// of a dimension the input lacks is skipped: the planner reports it).
CostOptions ArrivalsFromPins(const OpGraph& graph, CostOptions options,
                             const std::map<std::string, NdSbp>& pinned);

enum class CostNodeKind { kInput, kVariable, kOp };
const char* CostNodeKindName(CostNodeKind kind);  // "input", "variable", "op"

struct CostNodeInfo {
  CostNodeKind kind = CostNodeKind::kOp;
  std::string name;       // op name or source tensor name
  std::string op_type;    // ops and folded updates; empty for other sources
  std::string update_op;  // a variable written in place: its update op, folded in
  int64_t multiplier = 1;
  Placement placement;
  // Ops and folded updates: the signature per candidate (else empty).
  std::vector<NdSbpSignature> signatures;
  // Sources: the variable's or input's NdSbp per candidate (else empty).
  std::vector<NdSbp> sbps;
  // Per candidate: FLOPs the busiest rank does in one execution.
  std::vector<double> flops;
  // State variables of a folded update, each with whether it follows the
  // parameter's NdSbp (same shape) or is B.
  std::vector<std::pair<std::string, bool>> states;
};

struct CostEdgeInfo {
  std::string tensor;
  TensorDesc desc;   // as costed (compute dtype applied)
  int producer = 0;  // cost node indices; same as the CostGraph edge
  int consumer = 0;
  int output_index = 0;  // the producer's output (sources: 0)
  int input_index = 0;   // the consumer's (or folded update's) input argument
  int64_t multiplier = 1;
};

struct CostModelStats {
  double build_seconds = 0;
  int64_t ops = 0;                // ops of the OpGraph (updates included)
  int64_t boxing_plans = 0;       // distinct PlanBoxing calls
  int64_t distinct_matrices = 0;  // distinct EdgeMatrix objects
  // Op types with FLOPs that the cluster's compute table does not list,
  // priced by its FLOP/s figure instead (empty when it has no table).
  std::vector<std::string> untabled_op_types;
};

class CostModel {
 public:
  const CostGraph& graph() const { return graph_; }
  const std::vector<CostNodeInfo>& nodes() const { return nodes_; }
  const std::vector<CostEdgeInfo>& edges() const { return edges_; }
  const CostModelStats& stats() const { return stats_; }
  const CostOptions& options() const { return options_; }
  const Strategy& placements() const { return placements_; }
  const Cluster& cluster() const { return cluster_; }
  // The node of an op or a source (a folded update op's name finds its
  // variable's node); -1 when none.
  int NodeOf(const std::string& op_or_source) const;

  // The NdSbp edge `edge`'s producer makes at `candidate`, and the one its
  // consumer wants at `candidate`.
  const NdSbp& ProducedSbp(int edge, int candidate) const;
  const NdSbp& WantedSbp(int edge, int candidate) const;
  // The boxing behind one entry of an edge matrix (for reports): its steps
  // and every rank's bytes, as PlanBoxingBytes gives them (no SEND_RECV
  // boxes). Planned once per distinct (tensor shape and dtype, placements,
  // NdSbps) and shared: identical layers ask for the same plans, and a
  // 1,024-rank plan is worth keeping. Thread-safe.
  Maybe<std::shared_ptr<const BoxingPlan>> EdgeBoxing(int edge, int producer_candidate,
                                                      int consumer_candidate) const;
  // Seconds of one boxing plan on this model's cluster (one execution).
  Maybe<double> BoxingSeconds(const BoxingPlan& plan) const;

  // A choice (candidate per node) as a Strategy with the model's
  // placements; it passes Strategy::Validate. Errors: a bad choice.
  Maybe<Strategy> ToStrategy(const std::vector<int>& choice) const;
  // The choice that reproduces `strategy`'s signatures and source NdSbps.
  // Errors name the op or source whose layout is no candidate here.
  Maybe<std::vector<int>> ChoiceOf(const Strategy& strategy) const;

 private:
  friend Maybe<std::shared_ptr<const CostModel>> BuildCostModel(const OpGraph&, const Strategy&,
                                                                const Cluster&, const CostOptions&);
  explicit CostModel(Cluster cluster) : cluster_(std::move(cluster)) {}
  Cluster cluster_;
  CostGraph graph_;
  std::vector<CostNodeInfo> nodes_;
  std::vector<CostEdgeInfo> edges_;
  std::map<std::string, int> node_of_;
  CostModelStats stats_;
  CostOptions options_;
  Strategy placements_;
  // EdgeBoxing's plans by (shape and dtype, placement ids, NdSbps), and the
  // distinct placements those ids index.
  using BoxingKey = std::tuple<std::vector<int64_t>, int, NdSbp, int, NdSbp>;
  mutable std::mutex boxing_mutex_;
  mutable std::vector<Placement> boxing_placements_;
  mutable std::map<BoxingKey, std::shared_ptr<const BoxingPlan>> boxing_cache_;
};

// Builds the cost model. `placements` gives the default placement and any
// per-op and per-source placements (pipeline stages, e.g. from
// AssignStages); its signatures are ignored. Errors: bad options, a dtype
// the cluster has no FLOP/s for, a mesh larger than the cluster, and an
// infeasible memory limit: "... needs is X GiB, above the limit of Y GiB
// ...; largest: variable 'w' of shape (...) float32 needs Z GiB, ...".
Maybe<std::shared_ptr<const CostModel>> BuildCostModel(const OpGraph& graph,
                                                       const Strategy& placements,
                                                       const Cluster& cluster,
                                                       const CostOptions& options = {});

// Forward, backward or optimizer update (an op with in-place inputs).
enum class OpRole { kForward, kBackward, kUpdate };
OpRole RoleOf(const OpNode& node);

}  // namespace ofl
