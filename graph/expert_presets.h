// Expert presets: the hand-written layouts AutoDDL is measured against
// (DESIGN.md section 6), in two families: rule-based presets fix every
// source's and op's layout by the expert's rule, nothing chosen by cost;
// source presets ("_sources") fix only the sources and let the cost model
// choose the ops. The rules are below. Errors say why a preset does not
// apply (callers skip it). Pure functions.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "graph/auto_parallel.h"

// Rule-based presets (ExpertPresetNames: "data_parallel", "megatron", "2d",
// "zero", "vgg") are the layouts practitioners write: every source's NdSbp
// by the expert rule (below), then every op's signature fixed by rule, in
// graph order, as the data flows (ExpertPresetStrategy); nothing is chosen
// by cost. An op reads each weight in the layout the preset computes with
// (zero: B; every other preset: as stored) and its other inputs as they
// were produced, and takes, among its signatures that keep those weights,
// the one whose inputs need the least conversion, ranked per input and
// mesh axis and summed: S or B kept 0; B -> S (a local slice) 1; -> B
// (all-gather, all-reduce) or a P kept by a signature with a P output 2
// (kept by one without, as the seed of backward reads a partial loss, 0);
// anything else (all-to-all, -> P) 3; a layout an earlier reader already boxed the tensor to 0
// (lowering boxes a tensor once per layout). Ties: the least conversion of a weight gradient the op
// makes to its update's layout, then fewer outputs with P, then fewer split output axes (an op on
// whole inputs splits nothing by itself), then the registry's order. So elementwise ops, reductions
// and norms over non-split axes keep the split, a matmul follows its weight (column-parallel: input
// B, output split; row-parallel: input split, output P), a P meets its first nonlinear consumer as
// an all-reduce to B, and backward ops, being ops on the gradients, follow the same rule. An
// optimizer update takes its weight's stored layout on every input of the
// weight's shape (the gradient is boxed to it: P -> B all-reduce, or
// P -> S reduce-scatter for zero), B elsewhere. When no signature keeps
// the weights, the op takes its all-B signature with boxing around it and
// the preset notes it (ExpertPresetPlan::notes); an op with no all-B
// signature either is an error naming it. Every op that computes on an
// input gathered from a split (S -> B) is noted too.
//   data_parallel: inputs S(0) on every hierarchy axis, variables B.
//   megatron: tensor parallel on every hierarchy axis, inputs B. Transformer
//     weights by name suffix: column-parallel ".attn.qkv.weight",
//     ".mlp.fc.weight" (output features split, their ".bias" S(0)),
//     row-parallel ".attn.proj.weight", ".mlp.proj.weight" (input features
//     split, bias B); the LM head (the last forward matmul weight that is
//     none of those) column-parallel (vocabulary split). Which weight axis
//     holds the output features comes from the reading matmul's transpose_b
//     ([in, out] when false, PyTorch's [out, in] when true). A graph with
//     no such names (an MLP): its forward matmul weights in graph order
//     alternate column, row (Megatron's MLP pairs). In a Transformer graph
//     a table a forward embedding reads (the token embedding) is split on
//     the vocabulary, S(0) (VocabParallelEmbedding: its output P, all-reduced
//     at its first consumer). Everything else B. The loss is not split: the
//     registry's cross entropy has no class-split signature (a softmax over
//     split classes needs a max across ranks, which no Sbp expresses), so
//     the LM head's logits are gathered before it.
//   2d: a 2-D mesh: data_parallel on the outer axis, megatron on the inner.
//   zero: data_parallel whose trainable variables, their optimizer state
//     and gradients are split on tensor axis 0 over every hierarchy axis
//     (ZeRO stage 2's reduce-scatter of the gradients, sharded update,
//     all-gather of the weights for the forward); a weight is stored as its
//     update writes it, so it rests sharded too.
//   vgg: inputs S(0) on every axis, conv2d weights (and the bias_add biases
//     after them) B, classifier weights (matmul's second input) split on
//     their output features on every axis, their biases S(0). Needs a conv2d
//     and a matmul weight.
//
// Source presets (ExpertSourcePresetNames: the names above with
// "_sources", zero excepted) fix only the sources by the same rules (the
// LM head and the MLP pairs aside: megatron_sources needs Transformer
// weights) and let the cost model choose every op (searchers/source_presets.cpp
// runs autoddl's descent on the cost graph restricted to them).
// Errors say why a preset does not apply (callers skip it). Pure functions.

namespace ofl {

// "data_parallel", "megatron", "2d", "zero", "vgg".
std::vector<std::string> ExpertPresetNames();
// "data_parallel_sources", "megatron_sources", "2d_sources", "vgg_sources".
std::vector<std::string> ExpertSourcePresetNames();

// The NdSbp of every source (inputs and variables, optimizer state
// included) under `preset` (a name of either family) on `placement`'s
// hierarchy.
Maybe<std::map<std::string, NdSbp>> ExpertPresetSources(const std::string& preset,
                                                        const OpGraph& graph,
                                                        const Placement& placement);

struct ExpertPresetPlan {
  Strategy strategy;               // passes Strategy::Validate
  std::vector<std::string> notes;  // ops that could not follow the rule, and why
};

// Where the walk takes an op's N-D signatures from; null: CandidateSignatures
// on the op's placement. A planner passes its cost model's lists (the same
// signatures, already expanded; folded updates' filtered to those that keep
// their weight, which the rule needs anyway).
using SignaturesOf = std::function<const std::vector<NdSbpSignature>*(const OpNode&)>;

// A rule-based preset's whole strategy on `placements`' placements (its
// default, or per-op ones from AssignStages). `pinned` sources replace the
// preset's layout; a pin on an op output the rule does not produce is an
// error naming it. Validated (Strategy::Validate) unless `signatures_of` is
// given: then every signature is one of its, which its owner checks.
Maybe<ExpertPresetPlan> ExpertPresetStrategy(const std::string& preset, const OpGraph& graph,
                                             const Strategy& placements,
                                             const std::map<std::string, NdSbp>& pinned = {},
                                             const SignaturesOf& signatures_of = nullptr);

// Every applicable rule-based preset planned on `model` (options.pinned
// still honoured; a preset that conflicts with a pin is skipped); the
// cheapest. `tried`, when given, receives "name: predicted step" or "name:
// why not" per preset. Errors when none applies.
Maybe<PlannedStrategy> BestExpertPreset(const OpGraph& graph,
                                        std::shared_ptr<const CostModel> model,
                                        const PlanOptions& options = {},
                                        std::vector<std::string>* tried = nullptr);

}  // namespace ofl
