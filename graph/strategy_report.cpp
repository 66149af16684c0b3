#include "graph/strategy_report.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <limits>
#include <numeric>
#include <sstream>

#include "graph/cost_model_buckets.h"
#include "graph/cost_model_internal.h"  // LargestSliceElements
#include "oneflow_lite/core/checked_math.h"
#include "oneflow_lite/core/json.h"
#include "ops/op_registry.h"
#include "search/matmul_lower_bound.h"

namespace ofl {
namespace {

std::string SignatureOf(const CostNodeInfo& info, int candidate) {
  if (!info.signatures.empty()) return info.signatures[candidate].ToString();
  if (!info.sbps.empty()) return info.sbps[candidate].ToString();
  return "";
}

// Bytes of the undo copy, on the busiest rank under candidate `c`, of the
// variables that `info`'s folded update writes in place (its OpDef mutable
// inputs); 0 for a node that updates nothing.
int64_t UndoBytes(const OpGraph& graph, const CostNodeInfo& info, int c) {
  if (info.update_op.empty() || c >= static_cast<int>(info.signatures.size())) return 0;
  auto op = std::find_if(graph.ops().begin(), graph.ops().end(),
                         [&](const OpNode& n) { return n.name == info.update_op; });
  if (op == graph.ops().end()) return 0;
  Maybe<const OpDef*> def = OpRegistry::Find(op->type);
  if (!def.ok()) return 0;
  const NdSbpSignature& sig = info.signatures[c];
  int64_t bytes = 0;
  for (size_t i = 0; i < op->inputs.size() && i < sig.inputs.size(); ++i) {
    Maybe<TensorDesc> desc = graph.Desc(op->inputs[i]);
    if (!def.value()->is_mutable_input(static_cast<int>(i)) || !desc.ok()) continue;
    const int64_t elements = internal::LargestSliceElements(
        desc.value().shape, info.placement.hierarchy(), sig.inputs[i]);
    bytes = SaturatingAdd(bytes, SaturatingMul(elements, SizeOf(desc.value().dtype)));
  }
  return bytes;
}

bool HasPartial(const NdSbp& sbp) {
  for (const Sbp& s : sbp.axes()) {
    if (s.is_partial_sum()) return true;
  }
  return false;
}

bool IsMatmul(const std::string& op_type) {
  return op_type == "matmul" || op_type == "batch_matmul";
}

// m, n, k of a matmul whose second operand is a matrix: the first's batch
// dimensions fold into m (they share that matrix). nullopt otherwise.
std::optional<MatmulBoundReport> MatmulDims(const OpGraph& graph, const std::string& op_name) {
  for (const OpNode& node : graph.ops()) {
    if (node.name != op_name) continue;
    if (!IsMatmul(node.type) || node.inputs.size() != 2) return std::nullopt;
    auto a = graph.Desc(node.inputs[0]);
    auto b = graph.Desc(node.inputs[1]);
    if (!a.ok() || !b.ok() || b.value().shape.ndim() != 2 || a.value().shape.ndim() < 2) {
      return std::nullopt;
    }
    const bool ta = node.attrs.Has("transpose_a") && node.attrs.Get<bool>("transpose_a");
    const bool tb = node.attrs.Has("transpose_b") && node.attrs.Get<bool>("transpose_b");
    const Shape& as = a.value().shape;
    const Shape& bs = b.value().shape;
    MatmulBoundReport r;
    r.k = ta ? as[as.ndim() - 2] : as[as.ndim() - 1];
    r.n = tb ? bs[0] : bs[1];
    r.m = r.k > 0 ? as.NumElements() / r.k : 0;
    r.element_bytes = SizeOf(a.value().dtype);
    if (r.m < 1 || r.n < 1 || r.k < 1) return std::nullopt;
    return r;
  }
  return std::nullopt;
}

std::string Pad(const std::string& s, size_t width, bool right = false) {
  if (s.size() >= width) return s;
  return right ? std::string(width - s.size(), ' ') + s : s + std::string(width - s.size(), ' ');
}

// Node i's row under candidate c (without its communication, which the
// edges add).
NodeReport ReportNode(const OpGraph& graph, const CostModel& model, const Solution& eval, int i,
                      int c) {
  const CostNodeInfo& info = model.nodes()[i];
  NodeReport r;
  r.node = i;
  r.name = info.name;
  r.kind = CostNodeKindName(info.kind);
  r.op_type = info.op_type;
  r.signature = SignatureOf(info, c);
  r.compute_seconds = eval.node_seconds[i];
  r.memory_bytes = model.graph().node(i).candidates[c].memory_bytes;
  r.flops = c < static_cast<int>(info.flops.size()) ? info.flops[c] : 0;
  if (info.kind == CostNodeKind::kOp && IsMatmul(info.op_type)) {
    r.matmul = MatmulDims(graph, info.name);
    if (r.matmul) {
      r.matmul->processors = info.placement.size();
      if (model.options().compute_dtype) {
        r.matmul->element_bytes = SizeOf(*model.options().compute_dtype);
      }
    }
  }
  return r;
}

// Edge e's row, or nullopt when it moves nothing (same NdSbp, same
// placement); adds its seconds and a matmul's own bytes to `nodes`.
Maybe<std::optional<EdgeReport>> ReportEdge(const CostModel& model, const Solution& solution,
                                            const Solution& eval, int e,
                                            std::vector<NodeReport>* nodes) {
  const CostEdgeInfo& info = model.edges()[e];
  const int pc = solution.choice[info.producer];
  const int cc = solution.choice[info.consumer];
  (*nodes)[info.consumer].communication_seconds += eval.edge_seconds[e];
  const NdSbp& from = model.ProducedSbp(e, pc);
  const NdSbp& to = model.WantedSbp(e, cc);
  const bool same_place =
      model.nodes()[info.producer].placement == model.nodes()[info.consumer].placement;
  if (from == to && same_place) return std::optional<EdgeReport>();
  OFL_ASSIGN_OR_RETURN(std::shared_ptr<const BoxingPlan> shared, model.EdgeBoxing(e, pc, cc));
  const BoxingPlan& plan = *shared;
  EdgeReport r;
  r.edge = e;
  r.tensor = info.tensor;
  r.producer = model.nodes()[info.producer].name;
  r.consumer = model.nodes()[info.consumer].name;
  r.from = from.ToString();
  r.to = to.ToString();
  for (const BoxingStep& step : plan.steps) {
    int64_t busiest = 0;
    for (const auto& [rank, bytes] : step.bytes_sent) busiest = std::max(busiest, bytes);
    r.steps.push_back({BoxingKindName(step.kind), step.hierarchy_axis, busiest});
  }
  r.max_bytes = plan.MaxBytesSent();
  r.multiplier = info.multiplier;
  r.seconds = eval.edge_seconds[e];
  // A matmul's own communication: the boxing into its inputs and the
  // reduction of a partial-sum output.
  if ((*nodes)[info.consumer].matmul) (*nodes)[info.consumer].matmul->bytes += r.max_bytes;
  if ((*nodes)[info.producer].matmul && HasPartial(from)) {
    (*nodes)[info.producer].matmul->bytes += r.max_bytes;
  }
  if (!(r.max_bytes > 0 || r.seconds > 0)) return std::optional<EdgeReport>();
  return std::optional<EdgeReport>(std::move(r));
}

void SetMatmulBounds(std::vector<NodeReport>* nodes) {
  for (NodeReport& r : *nodes) {
    if (!r.matmul) continue;
    MatmulBound bound =
        MatmulCommunicationLowerBound(r.matmul->m, r.matmul->n, r.matmul->k, r.matmul->processors);
    r.matmul->lower_bound_bytes = bound.words * r.matmul->element_bytes;
    r.matmul->bound_case = MatmulBoundCaseName(bound.which);
  }
}

}  // namespace

Maybe<StrategyReport> ReportStrategy(const OpGraph& graph, const CostModel& model,
                                     const Solution& solution) {
  const CostGraph& cost = model.graph();
  OFL_ENSURE(static_cast<int>(solution.choice.size()) == cost.num_nodes(),
             "strategy report: the solution chooses for ", solution.choice.size(),
             " nodes, the cost model has ", cost.num_nodes());
  for (int i = 0; i < cost.num_nodes(); ++i) {
    OFL_ENSURE(solution.choice[i] >= 0 && solution.choice[i] < cost.num_candidates(i),
               "strategy report: node '", cost.node(i).name, "' has candidate ", solution.choice[i],
               " of ", cost.num_candidates(i));
  }
  OFL_ASSIGN_OR_RETURN(Solution eval, cost.Evaluate(solution.choice));
  StrategyReport report;
  report.cluster = model.cluster().name();
  report.placement = model.placements().placement().ToString();
  report.compute_table = !model.cluster().compute_table().empty();
  report.untabled_op_types = model.stats().untabled_op_types;
  report.micro_batches = model.options().micro_batches;
  report.total_seconds = eval.total_seconds;
  report.compute_seconds = eval.compute_seconds;
  report.transfer_seconds = eval.transfer_seconds;
  report.memory_bytes = eval.memory_bytes;
  report.memory_limit_bytes = cost.memory_limit();
  OFL_ASSIGN_OR_RETURN(const StepEstimate full, EstimateStep(model, solution.choice));
  report.full_seconds = full.total_s;
  report.gradient_buckets = static_cast<int64_t>(full.buckets.size());
  report.gradient_seconds = full.gradient_s;
  report.exposed_gradient_seconds = full.exposed_gradient_s;

  std::vector<NodeReport> nodes;
  for (int i = 0; i < cost.num_nodes(); ++i) {
    const int c = solution.choice[i];
    nodes.push_back(ReportNode(graph, model, eval, i, c));
    report.undo_bytes = SaturatingAdd(report.undo_bytes, UndoBytes(graph, model.nodes()[i], c));
  }
  for (int e = 0; e < cost.num_edges(); ++e) {
    OFL_ASSIGN_OR_RETURN(std::optional<EdgeReport> edge,
                         ReportEdge(model, solution, eval, e, &nodes));
    if (edge) report.edges.push_back(std::move(*edge));
  }
  SetMatmulBounds(&nodes);
  std::stable_sort(nodes.begin(), nodes.end(), [](const NodeReport& a, const NodeReport& b) {
    return a.seconds() > b.seconds();
  });
  std::stable_sort(report.edges.begin(), report.edges.end(),
                   [](const EdgeReport& a, const EdgeReport& b) { return a.seconds > b.seconds; });
  report.nodes = std::move(nodes);
  return report;
}

double Optimality::Gap(double total_seconds) const {
  if (bound_seconds <= 0) return total_seconds > 0 ? std::numeric_limits<double>::infinity() : 0;
  return std::max(0.0, total_seconds / bound_seconds - 1);
}

namespace {

// A gap as a percentage in plain notation: "0 %", "0.0123 %", "6.3 %", "85 %".
std::string PercentText(double gap) {
  const double pct = 100 * gap;
  std::ostringstream out;
  if (pct == 0 || pct >= 10) {
    out << std::fixed << std::setprecision(0) << pct;
  } else {
    out << std::setprecision(pct >= 1 ? 2 : 3) << pct;  // 3 significant digits at most
  }
  out << " %";
  return out.str();
}

}  // namespace

std::string Optimality::ToText(double total_seconds) const {
  std::ostringstream out;
  const double gap = Gap(total_seconds);
  const std::string cap = cap_seconds > 0 ? "cap " + FormatSeconds(cap_seconds) : "no time cap";
  if (proved) {
    out << "optimality: " << PercentText(gap) << " above the proven optimum "
        << FormatSeconds(bound_seconds) << " (exact, " << bound << "; " << FormatSeconds(seconds)
        << ", " << cap << ")";
  } else if (gap <= 1) {
    out << "optimality: not proved (exact: " << FormatSeconds(seconds) << ", " << cap
        << "); at most " << PercentText(gap) << " above the optimum: lower bound "
        << FormatSeconds(bound_seconds) << " (" << bound << "), best plan found "
        << FormatSeconds(best_seconds);
  } else {
    // A bound below half the plan says little: state the ratio, not a
    // percentage in the thousands.
    std::ostringstream ratio;
    ratio << std::setprecision(3) << total_seconds / bound_seconds;
    out << "optimality: not proved (exact: " << FormatSeconds(seconds) << ", " << cap
        << "); the plan costs " << (std::isfinite(gap) ? ratio.str() + "x" : "far more than")
        << " the lower bound " << FormatSeconds(bound_seconds) << " (" << bound
        << "), a bound too loose to tell its distance to the optimum; best plan found "
        << FormatSeconds(best_seconds) << " (a longer optimality cap may prove more)";
  }
  return out.str();
}

std::string Optimality::ToJson(double total_seconds) const {
  std::ostringstream out;
  out << "{\"proved\": " << (proved ? "true" : "false")
      << ", \"gap\": " << JsonNumber(Gap(total_seconds))
      << ", \"bound_s\": " << JsonNumber(bound_seconds) << ", \"bound\": " << JsonString(bound)
      << ", \"best_s\": " << JsonNumber(best_seconds) << ", \"seconds\": " << JsonNumber(seconds)
      << ", \"cap_s\": " << JsonNumber(cap_seconds) << "}";
  return out.str();
}

std::string StrategyReport::ToText(bool full, int max_rows) const {
  std::ostringstream out;
  out << "predicted step " << FormatSeconds(total_seconds) << " = compute "
      << FormatSeconds(compute_seconds) << " + communication " << FormatSeconds(transfer_seconds)
      << "; memory (search proxy) " << FormatBytes(memory_bytes) << " per device";
  if (memory_limit_bytes != kNoMemoryLimit)
    out << " (limit " << FormatBytes(memory_limit_bytes) << ")";
  out << "\nfull model (gradient buckets overlapped with backward): step "
      << FormatSeconds(full_seconds) << "; " << gradient_buckets << " bucket(s), "
      << FormatSeconds(gradient_seconds) << " of gradient communication, "
      << FormatSeconds(exposed_gradient_seconds) << " of it after backward";
  if (simulated_seconds) {
    out << "\nsimulated step (the plan as the runtime runs it: threads, slots, waits, overlap): "
        << FormatSeconds(*simulated_seconds);
  }
  if (peak_bytes) out << "\n" << peak_text;
  if (undo_bytes > 0) {
    out << "\nundo copy of variables (transactional steps): at most " << FormatBytes(undo_bytes)
        << " per device (the state updates write in place; host ranks lay it over arena bytes "
           "dead or spare at the update)";
  }
  if (optimality) out << "\n" << optimality->ToText(total_seconds);
  if (compute_table) {
    out << "\ncompute from the cluster's measured kernel times";
    if (!untabled_op_types.empty()) {
      out << "; not measured, priced by FLOP/s:";
      for (const std::string& t : untabled_op_types) out << " " << t;
    }
  }
  out << "\ncluster " << cluster << ", " << placement << ", " << micro_batches
      << " micro-batch(es)\n";
  const size_t node_rows = full ? nodes.size() : std::min<size_t>(nodes.size(), max_rows);
  out << "\n"
      << Pad(simulated_seconds ? "simulated" : "seconds", 12, true) << Pad("compute", 12, true)
      << Pad("comm", 12, true) << Pad("memory", 12, true) << "  " << Pad("kind", 12)
      << Pad("op", 28) << "signature\n";
  for (size_t i = 0; i < node_rows; ++i) {
    const NodeReport& r = nodes[i];
    std::string seconds = FormatSeconds(r.seconds());
    if (simulated_seconds) {
      auto it = simulated_op_seconds.find(r.name);
      seconds = it == simulated_op_seconds.end() ? "-" : FormatSeconds(it->second);
    }
    out << Pad(" " + seconds, 12, true) << Pad(" " + FormatSeconds(r.compute_seconds), 12, true)
        << Pad(" " + FormatSeconds(r.communication_seconds), 12, true)
        << Pad(" " + FormatBytes(r.memory_bytes), 12, true) << "  "
        << Pad((r.op_type.empty() ? r.kind : r.op_type) + " ", 12) << Pad(r.name + " ", 28)
        << r.signature;
    if (r.matmul) {
      out << "  [matmul " << r.matmul->m << "x" << r.matmul->k << "x" << r.matmul->n << " on "
          << r.matmul->processors << ": moves "
          << FormatBytes(static_cast<int64_t>(r.matmul->bytes)) << ", SPAA bound "
          << FormatBytes(static_cast<int64_t>(r.matmul->lower_bound_bytes)) << " ("
          << r.matmul->bound_case << ")]";
    }
    out << "\n";
  }
  if (node_rows < nodes.size()) out << "  ... " << nodes.size() - node_rows << " more (full)\n";
  const size_t edge_rows = full ? edges.size() : std::min<size_t>(edges.size(), max_rows);
  out << "\n"
      << Pad("seconds", 12, true) << Pad("bytes", 12, true) << "  " << Pad("tensor", 36)
      << "boxing\n";
  for (size_t i = 0; i < edge_rows; ++i) {
    const EdgeReport& r = edges[i];
    out << Pad(" " + FormatSeconds(r.seconds), 12, true)
        << Pad(" " + FormatBytes(r.max_bytes), 12, true) << "  " << Pad(r.tensor + " ", 36)
        << r.from << " -> " << r.to << " into " << r.consumer << ":";
    for (const BoxingStepReport& s : r.steps) {
      out << " " << s.kind;
      if (s.hierarchy_axis >= 0) out << "@axis" << s.hierarchy_axis;
      out << " " << FormatBytes(s.max_bytes);
    }
    if (r.multiplier != 1) out << " (x" << r.multiplier << ")";
    out << "\n";
  }
  if (edge_rows < edges.size()) out << "  ... " << edges.size() - edge_rows << " more (full)\n";
  return out.str();
}

namespace {
std::string JoinedJsonStrings(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& s : items) out += (out.empty() ? "" : ", ") + JsonString(s);
  return out;
}
}  // namespace

std::string StrategyReport::ToJson() const {
  std::ostringstream out;
  out << "{\"cluster\": " << JsonString(cluster) << ", \"placement\": " << JsonString(placement)
      << ", \"micro_batches\": " << micro_batches
      << ", \"predicted_step_s\": " << JsonNumber(total_seconds)
      << ", \"compute_s\": " << JsonNumber(compute_seconds)
      << ", \"communication_s\": " << JsonNumber(transfer_seconds)
      << ", \"full_step_s\": " << JsonNumber(full_seconds) << ", \"simulated_step_s\": "
      << (simulated_seconds ? JsonNumber(*simulated_seconds) : std::string("null"))
      << ", \"gradient_buckets\": " << gradient_buckets
      << ", \"gradient_s\": " << JsonNumber(gradient_seconds)
      << ", \"exposed_gradient_s\": " << JsonNumber(exposed_gradient_seconds)
      << ", \"compute_table\": " << (compute_table ? "true" : "false")
      << ", \"untabled_op_types\": [" << JoinedJsonStrings(untabled_op_types) << "]"
      << ", \"memory_bytes\": " << memory_bytes << ", \"undo_bytes\": " << undo_bytes
      << ", \"peak_bytes\": " << (peak_bytes ? std::to_string(*peak_bytes) : std::string("null"))
      << ", \"memory_limit_bytes\": "
      << (memory_limit_bytes == kNoMemoryLimit ? std::string("null")
                                               : std::to_string(memory_limit_bytes))
      << ", \"optimality\": "
      << (optimality ? optimality->ToJson(total_seconds) : std::string("null")) << ",\n \"ops\": [";
  for (size_t i = 0; i < nodes.size(); ++i) {
    const NodeReport& r = nodes[i];
    out << (i ? ",\n  " : "\n  ") << "{\"name\": " << JsonString(r.name)
        << ", \"kind\": " << JsonString(r.kind) << ", \"op_type\": " << JsonString(r.op_type)
        << ", \"signature\": " << JsonString(r.signature)
        << ", \"compute_s\": " << JsonNumber(r.compute_seconds)
        << ", \"communication_s\": " << JsonNumber(r.communication_seconds)
        << ", \"memory_bytes\": " << r.memory_bytes << ", \"flops\": " << JsonNumber(r.flops);
    if (r.matmul) {
      out << ", \"matmul\": {\"m\": " << r.matmul->m << ", \"n\": " << r.matmul->n
          << ", \"k\": " << r.matmul->k << ", \"p\": " << r.matmul->processors
          << ", \"bytes\": " << JsonNumber(r.matmul->bytes)
          << ", \"lower_bound_bytes\": " << JsonNumber(r.matmul->lower_bound_bytes)
          << ", \"bound_case\": " << JsonString(r.matmul->bound_case) << "}";
    }
    out << "}";
  }
  out << "],\n \"edges\": [";
  for (size_t i = 0; i < edges.size(); ++i) {
    const EdgeReport& r = edges[i];
    out << (i ? ",\n  " : "\n  ") << "{\"tensor\": " << JsonString(r.tensor)
        << ", \"producer\": " << JsonString(r.producer)
        << ", \"consumer\": " << JsonString(r.consumer) << ", \"from\": " << JsonString(r.from)
        << ", \"to\": " << JsonString(r.to) << ", \"bytes\": " << r.max_bytes
        << ", \"multiplier\": " << r.multiplier << ", \"seconds\": " << JsonNumber(r.seconds)
        << ", \"steps\": [";
    for (size_t s = 0; s < r.steps.size(); ++s) {
      out << (s ? ", " : "") << "{\"kind\": " << JsonString(r.steps[s].kind)
          << ", \"axis\": " << r.steps[s].hierarchy_axis << ", \"bytes\": " << r.steps[s].max_bytes
          << "}";
    }
    out << "]}";
  }
  out << "]}\n";
  return out.str();
}

}  // namespace ofl
