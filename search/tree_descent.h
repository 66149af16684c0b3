// Tree-block descent: coordinate descent whose coordinates are whole trees. The
// nodes are split into blocks that each induce a forest (greedily, in index
// order, and again in descending order: a node joins the first block where it
// closes no cycle; passes alternate the two splits). A pass visits the blocks
// in order and re-chooses each one exactly, by dynamic programming over its
// trees, with every other node fixed (their edges into the block become
// per-candidate costs).
//
// A TreeDescent refers to its graph (which must outlive it) and keeps what each
// block last saw; not synchronised.
#pragma once

#include <cstdint>
#include <vector>

#include "search/cost_graph.h"

// A block moves only when that strictly lowers the total and keeps the memory
// limit. A single node is the smallest such tree, so this reaches where the
// single-node sweeps of autoddl.h stop and goes further: a chain re-chosen as
// one block escapes the local optima a one-node move cannot. Internal to
// search/ (autoddl.cpp).

namespace ofl {

// Blocks of node indices, each inducing a forest (parallel edges count
// once), placing the nodes in ascending or descending index order.
std::vector<std::vector<int>> ForestBlocks(const CostGraph& graph, bool descending);

// The blocks of two splits (ascending and descending), used in turn.
class TreeDescent {
 public:
  explicit TreeDescent(const CostGraph& graph);  // `graph` must outlive it
  // Forgets what the blocks have seen (before a new start).
  void Reset();
  // One pass over the next split; returns how many blocks moved. A block
  // whose nodes and neighbours hold the choices they held when it was last
  // solved is skipped: it would not move. So is a settled block whose
  // neighbours outside it kept their choices and whose share of the total
  // did not grow (its own nodes moved, by moves that lowered the total):
  // solving it again would find the optimum it already had, no better than
  // its share now, and not move either.
  int Pass(std::vector<int>& choice);

  // Per block, what its trees' optima were (internal to the solver).
  struct TreeCache {
    bool laid_out = false;           // the fields below but the values are set
    bool solved = false;             // the values hold
    std::vector<int> tree_start;     // per tree: its first traversal position; then the end
    std::vector<int> outside_start;  // per tree: its first entry in `outside`; then the end
    std::vector<int> outside;        // the nodes outside the block each tree touches
    std::vector<int> outside_seen;   // their choices when the tree was last solved
    std::vector<double> tree_value;  // per tree: its optimum then
    std::vector<int> fresh;          // per traversal position: that optimum's choice
  };

 private:
  struct Block {
    std::vector<int> nodes;
    std::vector<int> watched;  // nodes and their neighbours, sorted
    std::vector<int> seen;     // their choices when last solved; empty: never
    std::vector<char> inside;  // per watched node: one of `nodes`
    // Since it was last solved: at its optimum given the nodes around it
    // (not when a better choice broke the memory limit), and its share of
    // the total then, which no later move of its own nodes alone raised.
    bool settled = false;
    double share = 0;
    TreeCache cache;
  };
  const CostGraph& graph_;
  std::vector<Block> splits_[2];
  int next_ = 0;
};

}  // namespace ofl
