// Matmul-bias fusion (graph/matmul_bias_fusion.h).
#include "graph/matmul_bias_fusion.h"

#include <map>
#include <string>

namespace ofl {

namespace {

// Whether `bias_add` (whose x is the output of `mm`, a matmul) may absorb it.
bool Fusable(const OpGraph& graph, const OpNode& mm, const OpNode& bias_add) {
  if (bias_add.type != "bias_add" || bias_add.inputs.size() != 2) return false;
  if (bias_add.inputs[0] != mm.outputs[0] || bias_add.inputs[1] == mm.outputs[0]) return false;
  Maybe<TensorDesc> out = graph.Desc(mm.outputs[0]);
  Maybe<TensorDesc> a = graph.Desc(mm.inputs[0]);
  if (!out.ok() || !a.ok() || out.value().shape.ndim() != 2) return false;
  const DataType dtype = out.value().dtype;
  if (a.value().dtype != dtype || !IsComputeFloat(dtype)) return false;  // bfloat16 in: no
  const int64_t axis = bias_add.attrs.Get<int64_t>("axis");
  return (axis == 1 || axis == -1) && graph.loss() != mm.outputs[0];
}

}  // namespace

MatmulBiasFusion FindMatmulBias(const OpGraph& graph) {
  const std::vector<OpNode>& ops = graph.ops();
  const int64_t n = static_cast<int64_t>(ops.size());
  MatmulBiasFusion f{std::vector<int64_t>(n, -1), std::vector<bool>(n, false)};
  // Every reader of each tensor (an op that reads it twice counts twice).
  std::map<std::string, std::vector<int64_t>> readers;
  for (int64_t i = 0; i < n; ++i) {
    for (const std::string& in : ops[i].inputs) readers[in].push_back(i);
  }
  for (int64_t i = 0; i < n; ++i) {
    const OpNode& mm = ops[i];
    if (mm.type != "matmul" || mm.inputs.size() != 2 || mm.outputs.size() != 1) continue;
    auto it = readers.find(mm.outputs[0]);
    if (it == readers.end() || it->second.size() != 1) continue;
    const int64_t j = it->second[0];
    if (!Fusable(graph, mm, ops[j])) continue;
    f.absorbs[j] = i;
    f.folded[i] = true;
  }
  return f;
}

OpNode MatmulBiasFusion::FusedNode(const OpGraph& graph, int64_t i) const {
  const OpNode& mm = graph.ops().at(absorbs.at(i));
  const OpNode& bias_add = graph.ops().at(i);
  OpNode fused;
  fused.name = mm.name;
  fused.type = "matmul_bias";
  fused.inputs = {mm.inputs[0], mm.inputs[1], bias_add.inputs[1]};
  fused.outputs = bias_add.outputs;
  fused.attrs = mm.attrs;
  return fused;
}

}  // namespace ofl
