// The "exact" searcher (search/exact.h: elimination, a Lagrangian bound on
// memory, branch and bound) on the cost graph restricted to the pins, its
// options, and the optimality measure PlanWithModel runs from any other
// searcher's plan. When elimination does not prove the optimum it starts
// from the registered "autoddl" searcher's answer, so it is never worse.
// Stateless; thread-safe on const inputs.
#pragma once

#include <vector>

#include "graph/searcher.h"
#include "search/exact.h"

namespace ofl {

struct ExactSearcherOptions {
  ExactOptions exact;  // search/exact.h; also the optimality measure's
  // When elimination does not prove the optimum, start from the "autoddl"
  // answer (presets and per-axis starts included), so an unproved exact is
  // never worse than autoddl; replaces exact's plain autoddl start.
  bool starts_from_autoddl = true;
};

// exact from `choice` (original indices) under input.options.pinned and
// exact's options, for at most `cap_seconds`.
Maybe<Optimality> MeasureOptimality(const SearchInput& input, const std::vector<int>& choice,
                                    double cap_seconds);

}  // namespace ofl
