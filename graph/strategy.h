// Strategy: the layout chosen for a logical graph (DESIGN.md sections 3, 6).
// For every op its N-D SBP signature, and so an NdSbp on every tensor it reads
// and writes; for every fed input and variable its own NdSbp. Every op and
// source has a placement: the strategy's, unless set otherwise (pipeline
// stages: AssignStages puts contiguous runs of the forward on disjoint
// placements; lowering boxes the edges between them). A Strategy is set by
// hand, deduced from the tensors a user pinned, drawn at random (property
// tests) or produced by a searcher.
//
// Value type; not synchronised.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "graph/op_graph.h"
#include "oneflow_lite/core/placement.h"
#include "oneflow_lite/core/slicing.h"
#include "ops/nd_sbp.h"

// Validate() is the one gate all of them pass. Rules beyond each op's own
// signatures: a variable written in place (optimizer update) has the NdSbp and
// the placement of its update op, and the update's state variables follow it.

namespace ofl {

class Strategy {
 public:
  Strategy() = default;
  explicit Strategy(Placement placement) : placement_(std::move(placement)) {}

  const Placement& placement() const { return placement_; }  // the default
  // Per op and per source (input, variable): its own placement, or the default.
  void SetPlacement(const std::string& op, Placement p) { op_placements_[op] = std::move(p); }
  void SetSourcePlacement(const std::string& tensor, Placement p) {
    source_placements_[tensor] = std::move(p);
  }
  const Placement& PlacementOf(const std::string& op) const;
  const Placement& SourcePlacement(const std::string& tensor) const;
  // Where a tensor is produced: its source's or its producing op's placement.
  Maybe<Placement> ProducedPlacement(const OpGraph& graph, const std::string& tensor) const;
  // Largest rank of any placement + 1.
  int64_t num_ranks() const;
  void SetSignature(const std::string& op, NdSbpSignature signature) {
    signatures_[op] = std::move(signature);
  }
  void SetSourceSbp(const std::string& tensor, NdSbp sbp) { sources_[tensor] = std::move(sbp); }
  const NdSbpSignature& signature(const std::string& op) const { return signatures_.at(op); }
  const std::map<std::string, NdSbpSignature>& signatures() const { return signatures_; }
  const std::map<std::string, NdSbp>& sources() const { return sources_; }

  // The NdSbp a tensor is produced with: its source's, or its producing op's output.
  Maybe<NdSbp> ProducedSbp(const OpGraph& graph, const std::string& tensor) const;

  // Every op has one of its own N-D signatures for this hierarchy, every
  // source an NdSbp that fits it, every in-place input its variable's NdSbp.
  // Errors name the op or tensor and the offending signature.
  Status Validate(const OpGraph& graph) const;
  std::string ToString(const OpGraph& graph) const;  // one line per source and op

 private:
  Placement placement_;
  std::map<std::string, Placement> op_placements_;
  std::map<std::string, Placement> source_placements_;
  std::map<std::string, NdSbpSignature> signatures_;
  std::map<std::string, NdSbp> sources_;
};

// Sources take `pinned` NdSbps (others broadcast, or what their in-place
// update needs); each op, in graph order, takes the first of its signatures
// that needs no boxing of its inputs, else the one matching most inputs.
Maybe<Strategy> DeduceStrategy(const OpGraph& graph, const Placement& placement,
                               const std::map<std::string, NdSbp>& pinned = {});

// Every source and every op whole on every rank of `placement` (B on every
// axis): on a placement of one device, the strategy of a one-device Session.
// Errors name an op that has no all-B signature.
Maybe<Strategy> ReplicatedStrategy(const OpGraph& graph, const Placement& placement);

// A valid strategy with a random signature per op (seeded), for property tests.
Maybe<Strategy> RandomStrategy(const OpGraph& graph, const Placement& placement, uint64_t seed);

// Pipeline stages: the forward ops (graph order, before "grad/seed", not
// updates) are cut into stages.size() contiguous runs, stage s starting at
// forward op boundaries[s - 1] (ascending, in (0, #forward)). Backward ops
// "grad/<op>/..." go to <op>'s stage, "grad/seed" to the loss producer's,
// "grad/sum/<t>" to t's producer's; an update (an op with in-place inputs)
// to the stage of its variable's first forward reader; any other op to its
// first input's producer's. Sources go to their first reader's placement,
// variables written in place to their update's. Sets placements only:
// signatures must be (re)chosen for them afterwards.
Status AssignStages(const OpGraph& graph, const std::vector<Placement>& stages,
                    const std::vector<int64_t>& boundaries, Strategy* strategy);
// The number of forward ops AssignStages splits.
int64_t NumForwardOps(const OpGraph& graph);

// RandomStrategy over stages: random boundaries (seeded), then random
// signatures and source NdSbps on each op's own placement.
Maybe<Strategy> RandomPipelineStrategy(const OpGraph& graph, const std::vector<Placement>& stages,
                                       uint64_t seed);

// The op's N-D signatures on `placement`'s hierarchy (the candidates).
Maybe<std::vector<NdSbpSignature>> CandidateSignatures(const OpGraph& graph, const OpNode& node,
                                                       const Placement& placement);

}  // namespace ofl
