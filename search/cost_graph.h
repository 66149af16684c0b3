// CostGraph: the abstract graph the searchers optimise (DESIGN.md section 6;
// OneFlow's auto-parallel SBP graph is the model). It knows no op: a node has K
// candidates (for graph/, an op's signatures), each with a compute time and a
// per-device memory size; a directed edge (u, v) has a K_u x K_v matrix of
// transfer times (row: u's candidate, column: v's). Matrices are immutable and
// shared by pointer, so identical layers reuse one matrix while each node keeps
// its own choice. A memory limit per device bounds the sum of the chosen
// candidates' memory.
//
// Value types; not synchronised.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "oneflow_lite/core/status.h"

// Cost model: a plain sum, total = sum of chosen compute times + sum of the
// chosen transfer times; no overlap of compute and communication is modelled. A
// Solution is one candidate per node with that total broken down by node and by
// edge. Errors: bad input (no candidates, a matrix of the wrong size, negative
// or non-finite costs) is a Status naming the node or edge. Const methods are
// safe to call from many threads at once.

namespace ofl {

struct Candidate {
  double compute_seconds = 0;  // finite, >= 0
  int64_t memory_bytes = 0;    // per device, >= 0
};

// rows x cols transfer seconds, row-major; every entry finite and >= 0.
class EdgeMatrix {
 public:
  static Maybe<std::shared_ptr<const EdgeMatrix>> Create(int rows, int cols,
                                                         std::vector<double> seconds);
  int rows() const { return rows_; }
  int cols() const { return cols_; }
  double at(int row, int col) const { return data_[static_cast<size_t>(row) * cols_ + col]; }
  const double* row(int row) const { return data_.data() + static_cast<size_t>(row) * cols_; }
  double min() const { return min_; }
  double max() const { return max_; }

 private:
  EdgeMatrix() = default;
  int rows_ = 0;
  int cols_ = 0;
  std::vector<double> data_;
  double min_ = 0;
  double max_ = 0;
};
using EdgeMatrixPtr = std::shared_ptr<const EdgeMatrix>;

struct CostNode {
  std::string name;
  std::vector<Candidate> candidates;
  int64_t min_memory_bytes = 0;  // over its candidates
};

struct CostEdge {
  int from = 0;
  int to = 0;
  EdgeMatrixPtr matrix;
};

// One edge seen from one of its ends. `outgoing`: the node is the edge's
// `from`, so its candidate picks the matrix row.
struct Incidence {
  int edge = 0;
  int neighbour = 0;
  bool outgoing = false;
};

inline constexpr int64_t kNoMemoryLimit = std::numeric_limits<int64_t>::max();

class CostGraph;

struct Solution {
  std::vector<int> choice;   // candidate index per node
  double total_seconds = 0;  // compute_seconds + transfer_seconds
  double compute_seconds = 0;
  double transfer_seconds = 0;
  std::vector<double> node_seconds;  // per node: its chosen compute time
  std::vector<double> edge_seconds;  // per edge: its chosen transfer time
  int64_t memory_bytes = 0;          // per device: sum of the chosen memory
  bool fits_memory = true;           // memory_bytes <= the graph's limit
  // A summary line, then the `max_lines` costliest nodes and edges by name.
  std::string ToString(const CostGraph& graph, int max_lines = 10) const;
};

class CostGraph {
 public:
  // Returns the new node's index. Errors: no candidates, bad costs, and a
  // largest memory that would bring the sum over nodes of their largest
  // candidate past INT64_MAX (so that no sum of one candidate per node, in
  // any searcher, overflows).
  Maybe<int> AddNode(std::string name, std::vector<Candidate> candidates);
  // Returns the new edge's index. Errors: unknown node, from == to, a null
  // matrix or one that is not K_from x K_to. Parallel edges add up.
  Maybe<int> AddEdge(int from, int to, EdgeMatrixPtr matrix);
  // kNoMemoryLimit (the default) switches the limit off. Errors: < 0.
  Status SetMemoryLimit(int64_t bytes);

  int num_nodes() const { return static_cast<int>(nodes_.size()); }
  int num_edges() const { return static_cast<int>(edges_.size()); }
  const CostNode& node(int index) const { return nodes_[index]; }
  const CostEdge& edge(int index) const { return edges_[index]; }
  int num_candidates(int node) const { return static_cast<int>(nodes_[node].candidates.size()); }
  const std::vector<Incidence>& incident(int node) const { return incident_[node]; }
  int64_t memory_limit() const { return memory_limit_; }
  int64_t num_candidates_total() const;  // sum of K over nodes

  // The smallest per-device memory any assignment needs: the sum over nodes
  // of each node's smallest candidate (exact, since memory is per node).
  int64_t SmallestMemoryNeed() const;
  // OK when SmallestMemoryNeed() fits the limit; else an error giving both.
  Status CheckMemoryFeasible() const;

  // The cost breakdown of `choice`. Errors: wrong length, index out of range.
  Maybe<Solution> Evaluate(const std::vector<int>& choice) const;
  // Fast versions for searchers: `choice` must be valid (CHECKed in debug).
  double TotalSeconds(const std::vector<int>& choice) const;
  int64_t MemoryBytes(const std::vector<int>& choice) const;
  // `node`'s compute for `candidate` plus its incident edges' transfer times
  // with every neighbour at its `choice`.
  double LocalSeconds(int node, int candidate, const std::vector<int>& choice) const;
  // The transfer time of `incidence` (seen from `node`) for the two choices.
  double EdgeSeconds(const Incidence& incidence, int node_choice, int neighbour_choice) const;

 private:
  std::vector<CostNode> nodes_;
  std::vector<CostEdge> edges_;
  std::vector<std::vector<Incidence>> incident_;
  int64_t memory_limit_ = kNoMemoryLimit;
  int64_t max_memory_total_ = 0;  // sum over nodes of their largest candidate's memory
};

// "1.23 ms"-style text for seconds, and "1.5 GiB"-style for bytes.
std::string FormatSeconds(double seconds);
std::string FormatBytes(int64_t bytes);

}  // namespace ofl
