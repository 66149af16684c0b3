// Test helpers for the cost model and planner tests: meshes, a two-level
// cluster with round numbers, and small real models built from registered
// ops (a linear layer, GPT-style Transformer blocks as flow.models.GPT
// traces them, a VGG-style conv net), each
// with its backward and optimizer. Variables are lazy (desc only).
#pragma once

#include <glog/logging.h>

#include <string>
#include <vector>

#include "graph/autodiff.h"
#include "graph/op_graph.h"
#include "graph/optimizer_pass.h"
#include "oneflow_lite/core/placement.h"
#include "search/cluster.h"

namespace ofl::testing {

using Ints = std::vector<int64_t>;

inline Placement Mesh(const Ints& hierarchy, int64_t first_rank = 0) {
  int64_t n = 1;
  for (int64_t h : hierarchy) n *= h;
  Ints ranks;
  for (int64_t r = 0; r < n; ++r) ranks.push_back(first_rank + r);
  return Placement::Create(DeviceType::kCPU, ranks, Shape(hierarchy)).value();
}

// Inner level "fast": 4 devices, 100 GB/s, 1 us per step; outer level
// "slow": unlimited, 10 GB/s, 10 us. `flops` float32 (default 1 TFLOP/s),
// twice that in bfloat16.
inline Cluster TwoLevelCluster(int64_t memory_bytes = int64_t{1} << 40, double flops = 1e12) {
  return Cluster::Parse(
             "name: 'two_level'\n"
             "levels { name: 'fast' size: 4 bandwidth_gbps: 100 latency_us: 1 }\n"
             "levels { name: 'slow' size: 0 bandwidth_gbps: 10 latency_us: 10 }\n"
             "device { name: 'dev' flops { key: 'float32' value: " +
                 std::to_string(flops) +
                 " }\n  flops { key: 'bfloat16' value: " + std::to_string(2 * flops) +
                 " } memory_bytes: " + std::to_string(memory_bytes) + " }\n",
             "two_level.pbtxt")
      .value();
}

inline std::string Op(OpGraph& g, const std::string& type, const std::vector<std::string>& inputs,
                      const AttrMap& attrs, const std::string& name, int output = 0) {
  auto outs = g.AddOp(type, inputs, attrs, name);
  CHECK(outs.ok()) << outs.status().message();
  return outs.value()[output];
}

inline void Train(OpGraph& g, const std::string& loss, const std::string& optimizer = "sgd") {
  CHECK(g.SetLoss(loss).ok());
  auto grads = AppendBackwardOfLoss(&g);
  CHECK(grads.ok()) << grads.status().message();
  OptimizerConf conf;
  conf.kind = optimizer;
  CHECK(AppendOptimizer(&g, conf, grads.value()).ok());
}

// x [batch, in] @ w [in, out] -> relu -> mean; trained with `optimizer`.
// x [8, 4] @ w [4, 3] (w all ones, with a value) -> mean, trained by `conf`
// (SGD by default): the small graph of the Strategy and DOT tests.
inline OpGraph TinyTrainGraph(const OptimizerConf& conf = {}) {
  OpGraph g;
  CHECK(g.AddInput("x", {{8, 4}, DataType::kFloat32}).ok());
  CHECK(g.AddVariable("w", Tensor::Full({4, 3}, DataType::kFloat32, 1.0), true).ok());
  std::string y = g.AddOp("matmul", {"x", "w"}, {}, "fc").value()[0];
  std::string loss = g.AddOp("reduce_mean", {y}, {}, "mean").value()[0];
  CHECK(g.SetLoss(loss).ok());
  auto grads = AppendBackwardOfLoss(&g).value();
  CHECK(AppendOptimizer(&g, conf, grads).ok());
  return g;
}

inline OpGraph LinearModel(int64_t batch, int64_t in, int64_t out,
                           const std::string& optimizer = "sgd") {
  OpGraph g;
  CHECK(g.AddInput("x", {Shape{batch, in}, DataType::kFloat32}).ok());
  CHECK(g.AddVariable("w", TensorDesc{Shape{in, out}, DataType::kFloat32}, true).ok());
  std::string y = Op(g, "matmul", {"x", "w"}, {}, "fc");
  y = Op(g, "relu", {y}, {}, "relu");
  Train(g, Op(g, "reduce_mean", {y}, {}, "mean"), optimizer);
  return g;
}

// A Linear layer on 2-D x [n, in]: weight [out, in] applied with
// transpose_b (PyTorch's layout, as flow.nn.Linear) or [in, out] without.
inline std::string Linear(OpGraph& g, const std::string& x, const std::string& prefix, int64_t in,
                          int64_t out, bool transpose_b) {
  const Shape w = transpose_b ? Shape{out, in} : Shape{in, out};
  CHECK(g.AddVariable(prefix + ".weight", TensorDesc{w, DataType::kFloat32}, true).ok());
  CHECK(g.AddVariable(prefix + ".bias", TensorDesc{Shape{out}, DataType::kFloat32}, true).ok());
  std::string y =
      Op(g, "matmul", {x, prefix + ".weight"}, {{"transpose_b", transpose_b}}, prefix + "/matmul");
  return Op(g, "bias_add", {y, prefix + ".bias"}, {{"axis", int64_t{1}}}, prefix + "/bias_add");
}

// flow.nn.Linear on x [b, t, in]: flattened to [b*t, in] and back.
inline std::string Linear3d(OpGraph& g, const std::string& x, const std::string& prefix, int64_t b,
                            int64_t t, int64_t in, int64_t out, bool transpose_b) {
  std::string y = Op(g, "reshape", {x}, {{"shape", Ints{b * t, in}}}, prefix + "/flatten");
  y = Linear(g, y, prefix, in, out, transpose_b);
  return Op(g, "reshape", {y}, {{"shape", Ints{b, t, out}}}, prefix + "/unflatten");
}

inline std::string LayerNorm(OpGraph& g, const std::string& x, const std::string& prefix,
                             int64_t d) {
  CHECK(g.AddVariable(prefix + ".weight", TensorDesc{Shape{d}, DataType::kFloat32}, true).ok());
  CHECK(g.AddVariable(prefix + ".bias", TensorDesc{Shape{d}, DataType::kFloat32}, true).ok());
  return Op(g, "layer_norm", {x, prefix + ".weight", prefix + ".bias"}, {}, prefix);
}

// One flow.models.GPT block (python/oneflow_lite/models/gpt.py,
// nn/modules/attention.py) on x [b, t, d], no dropout, its ops named
// "h.<i>..."; returns its output. Fused qkv features are head-major
// ([b*t, 3d] -> [b, t, h, 3, dh]), so a split of them by whole heads can
// reach attention. Reads the [t, t] variable "causal_mask".
inline std::string TransformerBlock(OpGraph& g, std::string x, int64_t i, int64_t b, int64_t t,
                                    int64_t d, int64_t heads, bool transpose_b) {
  const int64_t dh = d / heads;
  const std::string p = "h." + std::to_string(i);
  std::string a = LayerNorm(g, x, p + ".ln1", d);
  a = Op(g, "reshape", {a}, {{"shape", Ints{b * t, d}}}, p + ".attn/flatten");
  std::string qkv = Linear(g, a, p + ".attn.qkv", d, 3 * d, transpose_b);
  qkv = Op(g, "reshape", {qkv}, {{"shape", Ints{b, t, heads, 3, dh}}}, p + ".attn/heads");
  std::vector<std::string> parts;
  for (int64_t c = 0; c < 3; ++c) {
    const std::string n = p + ".attn/" + std::string(1, "qkv"[c]);
    std::string s = Op(g, "slice", {qkv},
                       {{"start", Ints{0, 0, 0, c, 0}},
                        {"stop", Ints{b, t, heads, c + 1, dh}},
                        {"step", Ints{1, 1, 1, 1, 1}}},
                       n + "/slice");
    s = Op(g, "reshape", {s}, {{"shape", Ints{b, t, heads, dh}}}, n + "/reshape");
    parts.push_back(Op(g, "transpose", {s}, {{"perm", Ints{0, 2, 1, 3}}}, n + "/transpose"));
  }
  std::string sc =
      Op(g, "batch_matmul", {parts[0], parts[1]}, {{"transpose_b", true}}, p + ".attn/scores");
  sc = Op(g, "scalar_mul", {sc}, {{"value", 0.125}}, p + ".attn/scale");
  sc = Op(g, "add", {sc, "causal_mask"}, {}, p + ".attn/mask");
  sc = Op(g, "softmax", {sc}, {{"axis", int64_t{-1}}}, p + ".attn/softmax");
  std::string y = Op(g, "batch_matmul", {sc, parts[2]}, {}, p + ".attn/context");
  y = Op(g, "transpose", {y}, {{"perm", Ints{0, 2, 1, 3}}}, p + ".attn/merge/transpose");
  y = Op(g, "reshape", {y}, {{"shape", Ints{b * t, d}}}, p + ".attn/merge/reshape");
  y = Linear(g, y, p + ".attn.proj", d, d, transpose_b);
  y = Op(g, "reshape", {y}, {{"shape", Ints{b, t, d}}}, p + ".attn/unflatten");
  x = Op(g, "add", {x, y}, {}, p + "/residual1");
  std::string m = LayerNorm(g, x, p + ".ln2", d);
  m = Linear3d(g, m, p + ".mlp.fc", b, t, d, 4 * d, transpose_b);
  m = Op(g, "gelu", {m}, {}, p + ".mlp/gelu");
  m = Linear3d(g, m, p + ".mlp.proj", b, t, 4 * d, d, transpose_b);
  return Op(g, "add", {x, m}, {}, p + "/residual2");
}

// GPT blocks (TransformerBlock) on x [b, t, d] (no embeddings), then mean, Adam.
inline OpGraph TransformerModel(int64_t layers, int64_t b, int64_t t, int64_t d, int64_t heads,
                                bool transpose_b = true) {
  OpGraph g;
  CHECK(g.AddInput("x", {Shape{b, t, d}, DataType::kFloat32}).ok());
  CHECK(g.AddVariable("causal_mask", TensorDesc{Shape{t, t}, DataType::kFloat32}, false).ok());
  std::string x = "x";
  for (int64_t i = 0; i < layers; ++i) x = TransformerBlock(g, x, i, b, t, d, heads, transpose_b);
  Train(g, Op(g, "reduce_mean", {x}, {}, "loss"), "adam");
  return g;
}

// The whole flow.models.GPT as it traces (no dropout): ids [b, t] -> wte
// (embedding [vocab, d]) + wpe [t, d] -> blocks -> ln_f -> head (Linear d
// -> vocab, no bias, [out, in]) -> cross entropy against labels [b, t] ->
// mean, trained by `optimizer`.
inline OpGraph GptModel(int64_t layers, int64_t b, int64_t t, int64_t d, int64_t heads,
                        int64_t vocab, const std::string& optimizer = "sgd") {
  OpGraph g;
  CHECK(g.AddInput("ids", {Shape{b, t}, DataType::kInt64}).ok());
  CHECK(g.AddInput("labels", {Shape{b, t}, DataType::kInt64}).ok());
  CHECK(g.AddVariable("causal_mask", TensorDesc{Shape{t, t}, DataType::kFloat32}, false).ok());
  CHECK(g.AddVariable("wte.weight", TensorDesc{Shape{vocab, d}, DataType::kFloat32}, true).ok());
  CHECK(g.AddVariable("wpe.weight", TensorDesc{Shape{t, d}, DataType::kFloat32}, true).ok());
  std::string x = Op(g, "embedding", {"wte.weight", "ids"}, {}, "wte");
  x = Op(g, "add", {x, "wpe.weight"}, {}, "embed/add");
  for (int64_t i = 0; i < layers; ++i) x = TransformerBlock(g, x, i, b, t, d, heads, true);
  x = LayerNorm(g, x, "ln_f", d);
  x = Op(g, "reshape", {x}, {{"shape", Ints{b * t, d}}}, "head/flatten");
  CHECK(g.AddVariable("head.weight", TensorDesc{Shape{vocab, d}, DataType::kFloat32}, true).ok());
  x = Op(g, "matmul", {x, "head.weight"}, {{"transpose_b", true}}, "head/matmul");
  x = Op(g, "reshape", {x}, {{"shape", Ints{b, t, vocab}}}, "head/unflatten");
  std::string loss = Op(g, "sparse_softmax_cross_entropy", {x, "labels"}, {}, "loss/per_token");
  Train(g, Op(g, "reduce_mean", {loss}, {}, "loss/mean"), optimizer);
  return g;
}

// conv2d [c_out, 3, 3, 3] -> relu -> flatten -> linear classifier -> mean, SGD.
inline OpGraph ConvNetModel(int64_t batch, int64_t channels, int64_t side, int64_t classes) {
  OpGraph g;
  CHECK(g.AddInput("images", {Shape{batch, 3, side, side}, DataType::kFloat32}).ok());
  CHECK(
      g.AddVariable("conv1.weight", TensorDesc{Shape{channels, 3, 3, 3}, DataType::kFloat32}, true)
          .ok());
  std::string y = Op(g, "conv2d", {"images", "conv1.weight"}, {{"padding", Ints{1, 1}}}, "conv1");
  y = Op(g, "relu", {y}, {}, "relu1");
  y = Op(g, "flatten", {y}, {}, "flatten");
  y = Linear(g, y, "fc", channels * side * side, classes, false);
  Train(g, Op(g, "reduce_mean", {y}, {}, "loss"));
  return g;
}

}  // namespace ofl::testing
