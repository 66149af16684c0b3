// A cost graph restricted to some candidates per node, and the maps of a
// choice between its indices and the original ones: what the searchers that
// honour pins or fixed sources search (autoddl, exact, the source presets).
// Value types; thread-safe on const inputs.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "graph/searcher.h"

namespace ofl {

// `graph` with node u keeping only allowed[u] (empty: all); edge matrices
// are cut to the kept rows and columns (shared again where the cuts agree).
// When nothing is cut it is `graph` itself, not a copy (which must then
// outlive it).
struct Restricted {
  const CostGraph& graph() const { return owned != nullptr ? *owned : *given; }
  std::unique_ptr<CostGraph> owned;
  const CostGraph* given = nullptr;
  std::vector<std::vector<int>> kept;  // per node: original candidate indices
};

Maybe<Restricted> Restrict(const CostGraph& graph, const std::vector<std::vector<int>>& allowed);

// input.model's graph restricted to the candidates that keep `fixed` with
// input.options.pinned over it (AllowedCandidates). Errors: a bad pin; no
// choice left that fits device memory (naming input.options.searcher).
Maybe<Restricted> RestrictToPins(const SearchInput& input, std::map<std::string, NdSbp> fixed);

// A choice over `r`'s indices in the original ones.
std::vector<int> ToOriginal(const Restricted& r, const std::vector<int>& choice);

// `choice` (original indices) in `r`'s indices; empty when some pick was cut.
std::vector<int> ToRestricted(const Restricted& r, const std::vector<int>& choice);

}  // namespace ofl
