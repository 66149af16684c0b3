// Predicted peak memory per rank of a DistributedSession
// (oneflow_lite/api/memory_estimate.h): lowering, the runtime's estimate,
// and the breakdown by what holds the bytes.
#include "oneflow_lite/api/memory_estimate.h"

#include <cctype>
#include <sstream>

#include "oneflow_lite/core/checked_math.h"
#include "runtime/memory_estimate.h"
#include "search/cost_graph.h"  // FormatBytes

namespace ofl {

namespace {

// Registers of a gradient bucket are named "bucket<k>/..."
// (graph/distributed_lowering.cpp, EmitBucket).
bool IsBucketRegister(const std::string& name) {
  const std::string prefix = "bucket";
  if (name.compare(0, prefix.size(), prefix) != 0) return false;
  size_t i = prefix.size();
  const size_t digits = i;
  while (i < name.size() && std::isdigit(static_cast<unsigned char>(name[i]))) ++i;
  return i > digits && i < name.size() && name[i] == '/';
}

void Add(int64_t* field, int64_t bytes) { *field = SaturatingAdd(*field, bytes); }

bool IsTrainable(const OpGraph& graph, const std::string& name) {
  return graph.IsVariable(name) && graph.variable(name).trainable;
}

// A variable's field: trainable, optimizer state ("<parameter>/<state>",
// optimizer_pass.h), or another (non-trainable) buffer.
int64_t* VariableField(const OpGraph& graph, const std::string& name, RankMemory* out) {
  if (IsTrainable(graph, name)) return &out->parameter_bytes;
  const size_t slash = name.rfind('/');
  if (slash != std::string::npos && IsTrainable(graph, name.substr(0, slash))) {
    return &out->optimizer_state_bytes;
  }
  return &out->buffer_bytes;
}

// Sorts one rank's own buffers into the report's fields.
void Classify(const OpGraph& graph, const proto::Plan& plan,
              const std::vector<int64_t>& producer_kind_of, const RankMemoryEstimate& e,
              RankMemory* out) {
  for (const OwnBuffer& b : e.own) {
    const proto::RegisterDesc& reg = plan.registers(b.register_id);
    const int64_t kind = producer_kind_of[b.register_id];
    if (kind == proto::TaskProto::VARIABLE) {
      Add(VariableField(graph, reg.name(), out), b.bytes);
    } else if (IsBucketRegister(reg.name())) {
      Add(&out->bucket_bytes, b.bytes);
    } else if (kind == proto::TaskProto::BOXING) {
      Add(&out->boxing_bytes, b.bytes);
    } else {
      Add(&out->register_bytes, b.bytes);
    }
  }
}

}  // namespace

std::vector<int64_t> MemoryEstimate::PeakBytes() const {
  std::vector<int64_t> out;
  for (const RankMemory& r : ranks) out.push_back(r.total_bytes);
  return out;
}

std::string MemoryEstimate::ToText() const {
  std::ostringstream out;
  out << "predicted peak memory (runtime model, liveness): " << FormatBytes(max_bytes);
  if (ranks.empty()) return out.str();
  const RankMemory& r = ranks[busiest_rank];
  out << " on rank " << r.rank << " = activations and temporaries " << FormatBytes(r.arena_bytes)
      << " (shared arena; " << FormatBytes(r.planned_bytes) << " unshared) + parameters "
      << FormatBytes(r.parameter_bytes) << " + optimizer state "
      << FormatBytes(r.optimizer_state_bytes) << " + other variables "
      << FormatBytes(r.buffer_bytes) << " + undo copy " << FormatBytes(r.undo_bytes) << " + boxing "
      << FormatBytes(r.boxing_bytes) << " + gradient buckets " << FormatBytes(r.bucket_bytes)
      << " + other registers " << FormatBytes(r.register_bytes);
  return out.str();
}

namespace {

// The estimate of `plan` with its breakdown.
Maybe<MemoryEstimate> EstimateOf(const OpGraph& graph, const proto::Plan& plan,
                                 const MemoryEstimateOptions& estimate_options) {
  OFL_ASSIGN_OR_RETURN(std::vector<RankMemoryEstimate> per_rank,
                       EstimatePlanMemory(plan, estimate_options));
  std::vector<int64_t> producer_kind(plan.registers_size(), -1);
  for (const auto& t : plan.tasks()) {
    for (int64_t id : t.outputs()) producer_kind[id] = t.kind();
  }
  MemoryEstimate out;
  for (const RankMemoryEstimate& e : per_rank) {
    RankMemory r;
    r.rank = e.rank;
    r.total_bytes = e.total();
    r.arena_bytes = e.arena_bytes;
    r.planned_bytes = e.planned_bytes;
    r.undo_bytes = e.undo_bytes;
    Classify(graph, plan, producer_kind, e, &r);
    if (r.total_bytes > out.max_bytes) {
      out.max_bytes = r.total_bytes;
      out.busiest_rank = r.rank;
    }
    out.ranks.push_back(r);
  }
  return out;
}

}  // namespace

Maybe<MemoryEstimate> PredictSessionMemory(const OpGraph& graph, const Strategy& strategy,
                                           const std::vector<std::string>& fetches,
                                           const DistributedOptions& options) {
  OFL_ENSURE(options.num_slots >= 1, "memory estimate: num_slots=", options.num_slots,
             " must be >= 1 (buffers per register)");
  OFL_ENSURE(options.micro_batches >= 1, "memory estimate: micro_batches=", options.micro_batches,
             " must be >= 1");
  OFL_ENSURE(options.gradient_bucket_bytes >= 0,
             "memory estimate: gradient_bucket_bytes=", options.gradient_bucket_bytes,
             " must be >= 0 (0: no buckets)");
  OFL_ASSIGN_OR_RETURN(proto::Plan plan,
                       LowerDistributed(graph, strategy, fetches, SessionLowering(options)));
  MemoryEstimateOptions estimate_options;
  estimate_options.transactional = options.transactional;
  estimate_options.plan_memory = options.plan_memory;
  return EstimateOf(graph, plan, estimate_options);
}

Maybe<MemoryEstimate> PredictSingleDeviceMemory(const OpGraph& graph,
                                                const SessionOptions& options) {
  OFL_ASSIGN_OR_RETURN(Strategy strategy, OneDeviceStrategy(graph));
  return PredictSessionMemory(graph, strategy, {}, OneDeviceOptions(options));
}

}  // namespace ofl
