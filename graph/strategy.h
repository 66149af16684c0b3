// Strategy: the layout chosen for a logical graph (DESIGN.md sections 3, 6).
// For every op its N-D SBP signature, and so an NdSbp on every tensor it
// reads and writes; for every fed input and variable its own NdSbp. One
// placement holds the whole graph (pipeline stages will give ops their own).
// A Strategy is set by hand, deduced from the tensors a user pinned, drawn
// at random (property tests) or produced by a searcher; Validate() is the
// one gate all of them pass. Rules beyond each op's own signatures:
// a variable written in place (optimizer update) has the NdSbp its update
// op's signature gives it, and the update's state variables follow it.
// Value type; not synchronised.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "graph/op_graph.h"
#include "oneflow_lite/core/placement.h"
#include "oneflow_lite/core/slicing.h"
#include "ops/nd_sbp.h"

namespace ofl {

class Strategy {
 public:
  Strategy() = default;
  explicit Strategy(Placement placement) : placement_(std::move(placement)) {}

  const Placement& placement() const { return placement_; }
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
  std::map<std::string, NdSbpSignature> signatures_;
  std::map<std::string, NdSbp> sources_;
};

// Sources take `pinned` NdSbps (others broadcast, or what their in-place
// update needs); each op, in graph order, takes the first of its signatures
// that needs no boxing of its inputs, else the one matching most inputs.
Maybe<Strategy> DeduceStrategy(const OpGraph& graph, const Placement& placement,
                               const std::map<std::string, NdSbp>& pinned = {});

// A valid strategy with a random signature per op (seeded), for property tests.
Maybe<Strategy> RandomStrategy(const OpGraph& graph, const Placement& placement, uint64_t seed);

// The op's N-D signatures on `placement`'s hierarchy (the candidates).
Maybe<std::vector<NdSbpSignature>> CandidateSignatures(const OpGraph& graph, const OpNode& node,
                                                       const Placement& placement);

}  // namespace ofl
