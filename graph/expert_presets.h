// Expert presets: the hand-written layouts AutoDDL is measured against
// (DESIGN.md section 6). A preset fixes the NdSbp of every source (fed
// inputs, variables); the ops then take the cost-optimal signatures given
// those sources (auto_parallel.h runs autoddl on the cost graph restricted
// to them), so a preset is as good as that expert layout can be.
//   data_parallel: inputs S(0) on every hierarchy axis, variables B.
//   megatron: tensor parallel on every hierarchy axis, inputs B. Transformer
//     weights are recognised by name suffix: column-parallel
//     ".attn.qkv.weight", ".mlp.fc.weight" (output features split, their
//     ".bias" S(0)) and row-parallel ".attn.proj.weight", ".mlp.proj.weight"
//     (input features split, bias B). Which weight axis holds the output
//     features comes from the reading matmul's transpose_b attribute
//     ([in, out] when false, PyTorch's [out, in] when true). Everything else
//     B. Needs at least one such weight.
//   2d: a 2-D mesh: data_parallel on the outer axis, megatron on the inner.
//   vgg: inputs S(0) on every axis, conv2d weights (and the bias_add biases
//     after them) B, classifier weights (matmul's second input) split on
//     their output features on every axis, their biases S(0). Needs a conv2d
//     and a matmul weight.
// Errors say why a preset does not apply (callers skip it). Pure functions.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "graph/auto_parallel.h"

namespace ofl {

// "data_parallel", "megatron", "2d", "vgg".
std::vector<std::string> ExpertPresetNames();

// The NdSbp of every source (inputs and variables, optimizer state
// included) under `preset` on `placement`'s hierarchy.
Maybe<std::map<std::string, NdSbp>> ExpertPresetSources(const std::string& preset,
                                                        const OpGraph& graph,
                                                        const Placement& placement);

// Every applicable preset planned on `model` (options.pinned still
// honoured; a preset that conflicts with a pin is skipped); the cheapest.
// `tried`, when given, receives "name: predicted step" or "name: why not"
// per preset. Errors when none applies.
Maybe<PlannedStrategy> BestExpertPreset(const OpGraph& graph,
                                        std::shared_ptr<const CostModel> model,
                                        const PlanOptions& options = {},
                                        std::vector<std::string>* tried = nullptr);

}  // namespace ofl
