// Strategy diff: two choices on ONE cost model (the same graph, placements
// and cluster) compared node by node and edge by edge. A node changed when
// its candidate differs: the signature before and
// after, and what its own compute and memory gain or lose. An edge changed
// when its charged seconds differ (one of its ends changed): its NdSbps and
// seconds before and after. The deltas add up exactly:
//   total delta = sum of node compute deltas + sum of edge deltas.
// Value types; building one reads the model only.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "graph/cost_model.h"
#include "search/cost_graph.h"

namespace ofl {

struct NodeChange {
  std::string name;
  std::string kind;  // "op", "input", "variable"
  std::string before;
  std::string after;
  double compute_delta = 0;  // after - before, seconds as charged
  int64_t memory_delta = 0;  // after - before, bytes per device
};

struct EdgeChange {
  std::string tensor;
  std::string producer;
  std::string consumer;
  std::string before;  // "from -> to" NdSbps
  std::string after;
  double before_seconds = 0;
  double after_seconds = 0;
  double delta() const { return after_seconds - before_seconds; }
};

struct StrategyDiff {
  double before_seconds = 0;  // predicted step times
  double after_seconds = 0;
  int64_t before_memory = 0;
  int64_t after_memory = 0;
  std::vector<NodeChange> nodes;  // |compute delta| largest first
  std::vector<EdgeChange> edges;  // |delta| largest first
  double delta() const { return after_seconds - before_seconds; }

  std::string ToText(bool full = false, int max_rows = 20) const;
  std::string ToJson() const;
};

// Errors: either choice of the wrong length or with a candidate out of range.
Maybe<StrategyDiff> DiffStrategies(const CostModel& model, const std::vector<int>& before,
                                   const std::vector<int>& after);

}  // namespace ofl
