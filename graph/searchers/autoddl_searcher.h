// The "autoddl" searcher (search/autoddl.h's coordinate descent on the cost
// graph restricted to the pins), its options, and its descent on a
// restricted graph, which the source presets share. Besides search/'s own
// starts it starts from the cheapest applicable expert preset of either
// family (a registered searcher) and, on meshes of 2+ axes, from each
// "replicate one mesh axis" optimum, so it is never worse than any of them.
// Stateless; thread-safe on const inputs.
#pragma once

#include <vector>

#include "graph/searcher.h"
#include "graph/searchers/restricted.h"
#include "search/autoddl.h"

namespace ofl {

struct AutoddlSearcherOptions {
  AutoddlOptions descent;  // search/autoddl.h; also the source presets' descent
  // Also start from the best applicable expert preset (rule-based or source).
  bool starts_from_presets = true;
  // Also start, for each hierarchy axis, from the best choice that
  // replicates that axis (the problem on the other axes alone: a plan for
  // [8] is one for [2, 8] with the outer axis B, which descent from the
  // built-in starts does not always find).
  bool starts_from_submeshes = true;
};

// AutoddlSearch on `r` under `options`; its pruned count and starts go to
// `stats`; the answer in the original indices.
Maybe<std::vector<int>> DescendOn(const Restricted& r, const AutoddlOptions& options,
                                  PlanStats* stats);

}  // namespace ofl
