// Helpers that write an op's 1-D SBP signatures (DESIGN.md section 4), so
// most ops declare theirs in one line. Each returns the full list: every
// split that keeps the op local, all-broadcast, and the partial-sum cases
// the op is linear in. The registry (distributed-execution issue) expands
// 1-D signatures to N-D. Pure functions; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "ops/op_registry.h"

namespace ofl {

enum class PartialRule {
  kNone,        // no partial-sum signature (nonlinear ops)
  kAllPartial,  // P in every input -> P out (add, sub, sum-like linear maps)
  kOnePartial,  // P in exactly one input, B elsewhere -> P out (mul, matmul-like)
};

// Elementwise ops with numpy broadcasting among the inputs (aligned from the
// right). Output axis `a` may be split when every input either has that axis
// at full size (split too) or broadcasts it (B). Every output gets the same Sbp.
SbpFn Elementwise(PartialRule rule);

// Einsum-style rule, e.g. "mk,kn->mn" or "bmk,bkn->bmn": a letter shared by
// inputs and output may be split everywhere it appears; a letter contracted
// away gives P; the op is linear in each input (kOnePartial).
std::vector<SbpSignature> EinsumSignatures(const std::string& spec);
SbpFn Einsum(const std::string& spec);

// Only the all-broadcast signature (ops that need the whole tensor).
SbpFn BroadcastOnly();

}  // namespace ofl
