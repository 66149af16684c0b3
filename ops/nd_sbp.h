// N-D SBP signatures (DESIGN.md sections 3 and 4): an op declares 1-D
// signatures only (one Sbp per input and output for ONE hierarchy axis); the
// registry expands them to a hierarchy of k axes by choosing a 1-D signature
// for every hierarchy axis independently. The result is the cartesian product
// of the op's 1-D list with itself k times. Value types and pure functions;
// thread-safe.
//
// Text form: every tensor's NdSbp, inputs then outputs, e.g. matmul on [2, 2]
//   "(S(0), B), (B, S(1)) -> (S(0), S(1))"
// An op without outputs (sgd_update) prints nothing after the arrow: "(S(0)), ... -> ".
#pragma once

#include <string>
#include <vector>

#include "ops/op_registry.h"

namespace ofl {

// One N-D signature: an NdSbp per input and per output, every NdSbp with one
// Sbp per hierarchy axis.
struct NdSbpSignature {
  std::vector<NdSbp> inputs;
  std::vector<NdSbp> outputs;

  // Hierarchy axes (0 when the signature names no tensor).
  int64_t num_axes() const;
  // The 1-D signature this one uses on hierarchy axis `axis`.
  SbpSignature Axis(int64_t axis) const;
  std::string ToString() const;  // "(S(0), B), (B, S(1)) -> (S(0), S(1))"
  // Parses ToString's form; spaces are optional. Every NdSbp must have the
  // same number of axes. Errors quote the text.
  static Maybe<NdSbpSignature> Parse(const std::string& text);

  bool operator==(const NdSbpSignature& o) const {
    return inputs == o.inputs && outputs == o.outputs;
  }
  bool operator!=(const NdSbpSignature& o) const { return !(*this == o); }
};

// The N-D signatures on `hierarchy_ndim` (>= 1) axes built from `one_d`:
// duplicates in `one_d` are dropped (the first stays), then every tuple
// (s_0, ..., s_{k-1}) of the remaining n signatures gives one signature whose
// hierarchy axis a uses s_a. Order: like nested loops with axis 0 outermost,
// i.e. tuple (i_0, ..., i_{k-1}) sits at index i_0 n^(k-1) + ... + i_{k-1};
// with k = 1 the 1-D order is kept. n^k signatures in all.
std::vector<NdSbpSignature> ExpandSbpSignatures(const std::vector<SbpSignature>& one_d,
                                                int64_t hierarchy_ndim);

// `def`'s N-D signatures for an instance (ctx as OpDef::SbpSignatures wants
// it: inputs and complete attrs) on a hierarchy of `hierarchy_ndim` axes.
Maybe<std::vector<NdSbpSignature>> NdSbpSignatures(const OpDef& def, const OpContext& ctx,
                                                   int64_t hierarchy_ndim);
// The same for a known mesh: ctx.hierarchy is set to `hierarchy` first, so
// divisibility-dependent 1-D signatures (see OpContext::hierarchy) join.
Maybe<std::vector<NdSbpSignature>> NdSbpSignatures(const OpDef& def, OpContext ctx,
                                                   const std::vector<int64_t>& hierarchy);

}  // namespace ofl
