// Searchers for the binding (python -> api): the registry's names and
// one-line descriptions, and searchers given as a function over a plain
// description of the cost graph (SearchProblem), e.g. one written in Python,
// registered and removed at run time (graph/searcher.h's registry). The
// function may run on any thread that plans; it must not keep the problem.
// Thread-safe (the registry has its own lock).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "oneflow_lite/core/status.h"

namespace ofl {

// The cost graph as a searcher sees it (DESIGN.md section 6): nodes with
// candidates (their compute seconds and per-device memory), edges with a
// matrix of transfer seconds; total = sum of the chosen compute + the chosen
// transfers, with the chosen memory summed within memory_limit_bytes.
struct SearchProblem {
  struct Node {
    std::string name;                  // op or source tensor
    std::string kind;                  // "input", "variable" or "op"
    std::vector<std::string> layouts;  // per candidate: "(S(0), B)" or a signature
    std::vector<double> compute_seconds;
    std::vector<int64_t> memory_bytes;
    std::vector<int> allowed;  // the candidates the pins leave; empty: all
  };
  struct Edge {
    int from = 0;
    int to = 0;
    std::string tensor;
    std::vector<std::vector<double>> seconds;  // [from's candidate][to's candidate]
  };
  std::string searcher;  // the name it was asked by
  std::vector<Node> nodes;
  std::vector<Edge> edges;
  int64_t memory_limit_bytes = 0;  // INT64_MAX: none
};

// One candidate index per node.
using SearchFunction = std::function<Maybe<std::vector<int>>(const SearchProblem&)>;

struct SearcherDescription {
  std::string name;
  std::string description;
};

// The registered searchers, in listing order.
std::vector<SearcherDescription> ListSearchers();

// Registers `function` as the searcher `name` (listed after the built-in
// ones). Its choice is checked: one candidate per node, each allowed by the
// pins (errors name the searcher, the node and the value). Errors: an empty
// or taken name.
Status RegisterSearchFunction(const std::string& name, const std::string& description,
                              SearchFunction function);

// Removes a searcher registered at run time. Errors: an unknown or built-in name.
Status UnregisterSearcher(const std::string& name);

}  // namespace ofl
