// libFuzzer target: a Job (the saved logical graph) as OpGraph::FromJob reads
// it: inputs, variables, every op through the op registry's checks and shape
// inference, the loss. A Job that loads must print, and its ToJob must load
// again to the same text.
#include <cstdint>

#include "fuzz/fuzz_input.h"
#include "graph/op_graph.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ofl::fuzz::ForEachParse<ofl::proto::Job>(data, size, [](const ofl::proto::Job& job) {
    ofl::Maybe<ofl::OpGraph> graph = ofl::OpGraph::FromJob(job);
    if (!graph.ok()) return;
    const std::string text = graph.value().ToString();
    ofl::Maybe<ofl::OpGraph> back = ofl::OpGraph::FromJob(graph.value().ToJob());
    if (!back.ok() || back.value().ToString() != text) __builtin_trap();
  });
  return 0;
}
