// Graphviz DOT of a Strategy over its graph: one node per source (ellipse,
// its NdSbp) and per op (box, type and N-D signature, placement when it is
// not the default), one edge per tensor read, labelled with the NdSbp it is
// produced with; an edge whose consumer needs another NdSbp (a boxing) is
// red and names both. Ops whose names start with "grad/", "update/" or
// "clip/" are grey so the forward stands out. Pure function; thread-safe.
#pragma once

#include <string>

#include "graph/op_graph.h"
#include "graph/strategy.h"

namespace ofl {

// `graph` must be the graph `strategy` was validated against.
std::string StrategyToDot(const OpGraph& graph, const Strategy& strategy);

}  // namespace ofl
