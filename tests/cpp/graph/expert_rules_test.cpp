// Rule-based expert presets (graph/expert_presets.h, ExpertPresetStrategy):
// the textbook layouts, checked by hand on a tiny GPT (embedding, one or two
// blocks, LM head, cross entropy) and a small conv net: the signature of
// each matmul, attention, embedding and loss, and the collectives per layer
// (a P input wanted B is an all-reduce, an S input wanted B an all-gather).
#include <gtest/gtest.h>

#include <set>
#include <utility>

#include "graph/distributed_lowering.h"
#include "graph/expert_presets.h"
#include "model_makers.h"

namespace ofl {
namespace {

using testing::Mesh;
using testing::TwoLevelCluster;

// vocab 16, 4 x 4 tokens, hidden 16, 4 heads: every split on [4] and [2, 2] is
// even.
OpGraph TinyGpt(int64_t layers = 1, const std::string& optimizer = "sgd", int64_t batch = 4) {
  return testing::GptModel(layers, batch, 4, 16, 4, 16, optimizer);
}

ExpertPresetPlan Plan(const std::string& preset, const OpGraph& g, const Placement& mesh) {
  auto plan = ExpertPresetStrategy(preset, g, Strategy(mesh));
  EXPECT_TRUE(plan.ok()) << plan.status().message();
  return plan.ok() ? std::move(plan).value() : ExpertPresetPlan{};
}

std::string Sig(const ExpertPresetPlan& p, const std::string& op) {
  auto it = p.strategy.signatures().find(op);
  return it == p.strategy.signatures().end() ? "(no op " + op + ")" : it->second.ToString();
}

std::string Source(const ExpertPresetPlan& p, const std::string& tensor) {
  return p.strategy.sources().at(tensor).ToString();
}

bool IsUpdate(const OpNode& op) { return RoleOf(op) == OpRole::kUpdate; }

struct Collectives {
  int all_reduce = 0;  // an input produced with P on some axis, wanted B there
  int all_gather = 0;  // S -> B on some axis (no P)
  int other = 0;       // anything but a local slice (B -> S)
};

// The boxings in front of the ops whose name contains `part` (updates
// apart), each (tensor, layout) once, as lowering boxes them: a tensor an
// earlier op already reads in that layout costs nothing more.
Collectives Count(const OpGraph& g, const Strategy& s, const std::string& part) {
  Collectives c;
  std::set<std::pair<std::string, std::string>> boxed;
  for (const OpNode& op : g.ops()) {
    const NdSbpSignature& sig = s.signature(op.name);
    for (size_t i = 0; i < op.inputs.size(); ++i) {
      const NdSbp have = s.ProducedSbp(g, op.inputs[i]).value();
      const NdSbp& want = sig.inputs[i];
      const bool first = boxed.insert({op.inputs[i], want.ToString()}).second;
      if (!first || op.name.find(part) == std::string::npos || IsUpdate(op)) continue;
      bool reduce = false, gather = false, local = true;
      for (int64_t a = 0; a < want.size(); ++a) {
        if (have[a] == want[a]) continue;
        reduce = reduce || (have[a].is_partial_sum() && want[a].is_broadcast());
        gather = gather || (have[a].is_split() && want[a].is_broadcast());
        local = local && have[a].is_broadcast() && want[a].is_split();
      }
      if (reduce) {
        ++c.all_reduce;
      } else if (gather) {
        ++c.all_gather;
      } else if (!local) {
        ++c.other;
      }
    }
  }
  return c;
}

TEST(ExpertRulesTest, DataParallelSplitsEveryActivationAndAllReducesEveryGradient) {
  const OpGraph g = TinyGpt();
  const ExpertPresetPlan p = Plan("data_parallel", g, Mesh({2, 2}));
  const NdSbp split = NdSbp::Parse("(S(0), S(0))").value();
  for (const std::string& v : g.variable_names()) EXPECT_EQ(Source(p, v), "(B, B)") << v;
  EXPECT_EQ(Source(p, "ids"), "(S(0), S(0))");
  for (const OpNode& op : g.ops()) {
    if (RoleOf(op) != OpRole::kForward || op.name == "loss/mean") continue;
    for (size_t o = 0; o < op.outputs.size(); ++o) {
      EXPECT_EQ(p.strategy.signature(op.name).outputs[o], split) << op.name;
    }
  }
  EXPECT_EQ(Sig(p, "wte"), "(B, B), (S(0), S(0)) -> (S(0), S(0))");
  EXPECT_EQ(Sig(p, "h.0.attn.qkv/matmul"), "(S(0), S(0)), (B, B) -> (S(0), S(0))");
  EXPECT_EQ(Sig(p, "h.0.attn/scores"), "(S(0), S(0)), (S(0), S(0)) -> (S(0), S(0))");
  // Every weight gradient is made as a partial sum and all-reduced into its
  // update.
  int updates = 0;
  for (const OpNode& op : g.ops()) {
    if (!IsUpdate(op)) continue;
    ++updates;
    const std::string& grad = op.inputs[1];
    EXPECT_EQ(p.strategy.ProducedSbp(g, grad).value().ToString(), "(P, P)") << op.name;
    EXPECT_EQ(p.strategy.signature(op.name).inputs[1].ToString(), "(B, B)") << op.name;
  }
  EXPECT_EQ(updates, 17);  // wte, wpe, 12 in the block, ln_f's 2, head
  const Collectives layer = Count(g, p.strategy, "h.0");
  EXPECT_EQ(layer.all_reduce + layer.all_gather + layer.other, 0);
  // The mean of the per-token losses takes their batch split to a partial
  // sum (its kernel divides by the logical count), and the seed of backward
  // takes that P: nothing is gathered, so no op needs a note.
  EXPECT_EQ(Sig(p, "loss/mean"), "(S(0), S(0)) -> (P, P)");
  EXPECT_EQ(p.notes.size(), 0u);
}

TEST(ExpertRulesTest, MegatronIsColumnThenRowWithOneAllReduceEachWay) {
  const OpGraph g = TinyGpt(2);
  const ExpertPresetPlan p = Plan("megatron", g, Mesh({4}));
  EXPECT_EQ(Source(p, "ids"), "(B)");
  // [out, in] weights: column-parallel splits axis 0, row-parallel axis 1.
  EXPECT_EQ(Source(p, "h.0.attn.qkv.weight"), "(S(0))");
  EXPECT_EQ(Source(p, "h.0.attn.qkv.bias"), "(S(0))");
  EXPECT_EQ(Source(p, "h.0.attn.proj.weight"), "(S(1))");
  EXPECT_EQ(Source(p, "h.0.attn.proj.bias"), "(B)");
  EXPECT_EQ(Source(p, "h.1.mlp.fc.weight"), "(S(0))");
  EXPECT_EQ(Source(p, "h.1.mlp.proj.weight"), "(S(1))");
  EXPECT_EQ(Source(p, "head.weight"), "(S(0))");  // vocabulary-parallel LM head
  EXPECT_EQ(Sig(p, "h.0.attn.qkv/matmul"), "(B), (S(0)) -> (S(1))");
  EXPECT_EQ(Sig(p, "h.0.attn/heads"),
            "(S(1)) -> (S(2))");  // whole heads per rank
  EXPECT_EQ(Sig(p, "h.0.attn/scores"), "(S(1)), (S(1)) -> (S(1))");
  EXPECT_EQ(Sig(p, "h.0.attn/softmax"), "(S(1)) -> (S(1))");
  EXPECT_EQ(Sig(p, "h.0.attn.proj/matmul"), "(S(1)), (S(1)) -> (P)");
  // The row-parallel output is all-reduced at once: its consumer reads it B.
  EXPECT_EQ(Sig(p, "h.0.attn.proj/bias_add"), "(B), (B) -> (B)");
  EXPECT_EQ(Sig(p, "h.1.mlp.fc/matmul"), "(B), (S(0)) -> (S(1))");
  EXPECT_EQ(Sig(p, "h.1.mlp/gelu"), "(S(2)) -> (S(2))");
  EXPECT_EQ(Sig(p, "h.1.mlp.proj/matmul"), "(S(1)), (S(1)) -> (P)");
  EXPECT_EQ(Sig(p, "h.0.ln1"), "(B), (B), (B) -> (B), (B), (B)");
  EXPECT_EQ(Sig(p, "head/matmul"), "(B), (S(0)) -> (S(1))");
  // VocabParallelEmbedding: wte split on the vocabulary, its output a
  // partial sum (each rank's rows, zeros elsewhere) all-reduced at the add.
  EXPECT_EQ(Source(p, "wte.weight"), "(S(0))");
  EXPECT_EQ(Source(p, "wpe.weight"), "(B)");
  EXPECT_EQ(Sig(p, "wte"), "(S(0)), (B) -> (P)");
  EXPECT_EQ(Sig(p, "embed/add"), "(B), (B) -> (B)");
  const Collectives embed = Count(g, p.strategy, "embed/");
  EXPECT_EQ(embed.all_reduce, 1);
  EXPECT_EQ(embed.all_gather + embed.other, 0);
  // Its gradient: each rank scatter-adds the ids of its own rows, from the
  // replicated ids and output gradient: no collective, no slicing.
  const OpNode* wte_update = nullptr;
  for (const OpNode& op : g.ops()) {
    if (IsUpdate(op) && op.inputs[0] == "wte.weight") wte_update = &op;
  }
  ASSERT_NE(wte_update, nullptr);
  const std::string wte_grad = wte_update->inputs[1];
  const OpNode* wte_grad_op = nullptr;
  for (const OpNode& op : g.ops()) {
    if (!op.outputs.empty() && op.outputs[0] == wte_grad) wte_grad_op = &op;
  }
  ASSERT_NE(wte_grad_op, nullptr);
  EXPECT_EQ(wte_grad_op->type, "embedding_grad");
  EXPECT_EQ(Sig(p, wte_grad_op->name), "(B), (B) -> (S(0))");
  // Cross entropy has no class-split signature (a softmax over split
  // classes needs a max across ranks, which no Sbp expresses): the logits
  // are gathered before the loss.
  EXPECT_EQ(Sig(p, "loss/per_token"), "(B), (B) -> (B)");
  ASSERT_EQ(p.notes.size(), 1u);
  EXPECT_NE(p.notes[0].find("'loss/per_token' (sparse_softmax_cross_entropy) gathers"),
            std::string::npos);
  for (const std::string layer : {"h.0", "h.1"}) {
    SCOPED_TRACE(layer);
    // Forward: after attn.proj and mlp.proj; backward: after the qkv and fc
    // input gradients (Megatron's f and g operators). Nothing else moves.
    const Collectives fwd = Count(g, p.strategy, layer + ".");
    const Collectives bwd = Count(g, p.strategy, "grad/" + layer + ".");
    EXPECT_EQ(bwd.all_reduce, 2);
    EXPECT_EQ(fwd.all_reduce - bwd.all_reduce, 2);  // "h.0." matches both
    EXPECT_EQ(fwd.all_gather + fwd.other, 0);
  }
  // Weight gradients need no collective: each rank computes its own part,
  // the LM head's too (from the logits' gradient sliced on the vocabulary,
  // which the head's input gradient reads in that layout already).
  for (const OpNode& op : g.ops()) {
    if (!IsUpdate(op)) continue;
    const NdSbp grad = p.strategy.ProducedSbp(g, op.inputs[1]).value();
    const NdSbp& weight = p.strategy.sources().at(op.inputs[0]);
    EXPECT_EQ(grad, weight) << op.name << ": " << grad;
  }
  // The LM head backward: each rank its vocabulary slice of the logits'
  // gradient (a local slice of the replicated one); the input gradient a
  // partial sum, all-reduced once (Megatron's f operator of a
  // column-parallel layer).
  std::multiset<std::string> head_grads;
  for (const OpNode& op : g.ops()) {
    if (op.name.rfind("grad/head/matmul", 0) == 0 && op.type == "matmul") {
      head_grads.insert(Sig(p, op.name));
    }
  }
  EXPECT_EQ(head_grads,
            (std::multiset<std::string>{"(S(1)), (S(0)) -> (P)", "(S(1)), (B) -> (S(0))"}));
  const Collectives head = Count(g, p.strategy, "grad/head/");
  EXPECT_EQ(head.all_reduce, 1);
  EXPECT_EQ(head.all_gather + head.other, 0);
}

TEST(ExpertRulesTest, TwoDimensionalIsDataOuterMegatronInner) {
  const OpGraph g = TinyGpt();
  const ExpertPresetPlan p = Plan("2d", g, Mesh({2, 2}));
  EXPECT_EQ(Source(p, "ids"), "(S(0), B)");
  EXPECT_EQ(Source(p, "wte.weight"), "(B, S(0))");
  EXPECT_EQ(Sig(p, "wte"), "(B, S(0)), (S(0), B) -> (S(0), P)");
  EXPECT_EQ(Source(p, "h.0.attn.qkv.weight"), "(B, S(0))");
  EXPECT_EQ(Sig(p, "h.0.attn.qkv/matmul"), "(S(0), B), (B, S(0)) -> (S(0), S(1))");
  EXPECT_EQ(Sig(p, "h.0.attn/scores"), "(S(0), S(1)), (S(0), S(1)) -> (S(0), S(1))");
  EXPECT_EQ(Sig(p, "h.0.attn.proj/matmul"), "(S(0), S(1)), (B, S(1)) -> (S(0), P)");
  EXPECT_EQ(Sig(p, "h.0.attn.proj/bias_add"), "(S(0), B), (B, B) -> (S(0), B)");
  // The proj weight's gradient: partial over the data axis, all-reduced there.
  const OpNode* update = nullptr;
  for (const OpNode& op : g.ops()) {
    if (IsUpdate(op) && op.inputs[0] == "h.0.attn.proj.weight") update = &op;
  }
  ASSERT_NE(update, nullptr);
  EXPECT_EQ(p.strategy.ProducedSbp(g, update->inputs[1]).value().ToString(), "(P, S(1))");
  EXPECT_EQ(p.strategy.signature(update->name).inputs[1].ToString(), "(B, S(1))");
}

TEST(ExpertRulesTest, ZeroShardsStateAndGradientsAndGathersWeights) {
  const OpGraph g = TinyGpt(1, "adam");
  const ExpertPresetPlan p = Plan("zero", g, Mesh({2, 2}));
  EXPECT_EQ(Source(p, "h.0.attn.qkv.weight"), "(S(0), S(0))");
  EXPECT_EQ(Source(p, "h.0.attn.qkv.weight/m"), "(S(0), S(0))");
  EXPECT_EQ(Source(p, "h.0.attn.qkv.weight/v"), "(S(0), S(0))");
  EXPECT_EQ(Source(p, "causal_mask"), "(B, B)");
  // The forward reads the weight whole (all-gathered), the data split.
  EXPECT_EQ(Sig(p, "h.0.attn.qkv/matmul"), "(S(0), S(0)), (B, B) -> (S(0), S(0))");
  for (const OpNode& op : g.ops()) {
    if (!IsUpdate(op)) continue;
    // The gradient: a partial sum, reduce-scattered into the sharded update.
    EXPECT_EQ(p.strategy.ProducedSbp(g, op.inputs[1]).value().ToString(), "(P, P)") << op.name;
    EXPECT_EQ(p.strategy.signature(op.name).inputs[1], p.strategy.sources().at(op.inputs[0]));
  }
  EXPECT_EQ(p.strategy.ProducedSbp(g, "h.0.attn.qkv.weight").value().ToString(), "(S(0), S(0))");
  // Activations move no more than under data parallelism: only weights are
  // gathered.
  const Collectives layer = Count(g, p.strategy, "h.0.attn/");
  EXPECT_EQ(layer.all_reduce + layer.all_gather + layer.other, 0);
}

TEST(ExpertRulesTest, VggIsDataParallelConvolutionsAndModelParallelClassifier) {
  const OpGraph g = testing::ConvNetModel(8, 4, 6, 10);
  const ExpertPresetPlan p = Plan("vgg", g, Mesh({4}));
  EXPECT_EQ(Sig(p, "conv1"), "(S(0)), (B) -> (S(0))");
  EXPECT_EQ(Sig(p, "fc/matmul"),
            "(B), (S(1)) -> (S(1))");  // [in, out]: output features
  EXPECT_EQ(Sig(p, "fc/bias_add"), "(S(1)), (S(0)) -> (S(1))");
  const Collectives fc = Count(g, p.strategy, "fc/matmul");
  EXPECT_EQ(fc.all_gather,
            1);  // the flattened features, gathered for the classifier
  ASSERT_GE(p.notes.size(), 1u);
  EXPECT_NE(p.notes[0].find("'fc/matmul' (matmul) gathers input"), std::string::npos);
}

TEST(ExpertRulesTest, MegatronOnAnMlpPairsColumnThenRow) {
  OpGraph g;
  ASSERT_TRUE(g.AddInput("x", {Shape{8, 6}, DataType::kFloat32}).ok());
  std::string y = testing::Linear(g, "x", "fc0", 6, 8, true);
  y = testing::Op(g, "relu", {y}, {}, "relu");
  y = testing::Linear(g, y, "fc1", 8, 4, true);
  testing::Train(g, testing::Op(g, "reduce_mean", {y}, {}, "mean"));
  const ExpertPresetPlan p = Plan("megatron", g, Mesh({2}));
  EXPECT_EQ(Sig(p, "fc0/matmul"), "(B), (S(0)) -> (S(1))");
  EXPECT_EQ(Sig(p, "fc1/matmul"), "(S(1)), (S(1)) -> (P)");
  EXPECT_EQ(Sig(p, "fc1/bias_add"), "(B), (B) -> (B)");
  EXPECT_TRUE(p.notes.empty());
}

// Distinct all-reduce instances (group ids) of a lowered plan.
size_t AllReduces(const proto::Plan& plan) {
  std::set<int64_t> groups;
  for (const proto::TaskProto& t : plan.tasks()) {
    if (t.kind() == proto::TaskProto::BOXING &&
        t.boxing_conf().kind() == proto::BoxingConf::ALL_REDUCE) {
      groups.insert(t.boxing_conf().group_id());
    }
  }
  return groups.size();
}

TEST(ExpertRulesTest, APartialSumLossSeedsBackwardWithoutAnAllReduce) {
  // x [8, 6] @ w [6, 4], squared, summed: under data_parallel the sum of a
  // batch split is a partial sum, and the seed of backward (ones_like)
  // reads it as P and makes B (d(sum_r L_r)/dL_r = 1 on every rank).
  OpGraph g;
  ASSERT_TRUE(g.AddInput("x", {Shape{8, 6}, DataType::kFloat32}).ok());
  ASSERT_TRUE(g.AddVariable("w", TensorDesc{Shape{6, 4}, DataType::kFloat32}, true).ok());
  const std::string y = testing::Op(g, "matmul", {"x", "w"}, {}, "fc");
  const std::string sq = testing::Op(g, "mul", {y, y}, {}, "square");
  testing::Train(g, testing::Op(g, "reduce_sum", {sq}, {}, "loss"));
  const ExpertPresetPlan p = Plan("data_parallel", g, Mesh({2, 2}));
  EXPECT_EQ(p.strategy.ProducedSbp(g, g.loss()).value().ToString(), "(P, P)");
  EXPECT_EQ(Sig(p, "grad/seed"), "(P, P) -> (B, B)");
  EXPECT_EQ(Count(g, p.strategy, "grad/").all_reduce, 0);
  // Lowered without buckets, the only all-reduce is w's gradient's: (P, P)
  // -> (B, B) on [2, 2] is one step per axis, 2 groups each: 4 instances.
  // (The loss's all-reduce would add 4 more.)
  const proto::Plan plan = LowerDistributed(g, p.strategy, {g.loss()}, LoweringOptions{}).value();
  EXPECT_EQ(AllReduces(plan), 4u);
}

TEST(ExpertRulesTest, WhatCannotFollowTheRuleIsNotedOrRefused) {
  // 3 sequences on 4 ranks: [3, 4, 16] -> [12, 16] has no split signature
  // on [2, 2] (the reshape rule wants extents divisible by 4): gathered, noted.
  const OpGraph odd = TinyGpt(1, "sgd", 3);
  const ExpertPresetPlan p = Plan("data_parallel", odd, Mesh({2, 2}));
  bool reshape = false;
  for (const std::string& n : p.notes)
    reshape = reshape || n.find("(reshape) gathers") != std::string::npos;
  EXPECT_TRUE(reshape);
  const OpGraph g = TinyGpt();
  auto two_d = ExpertPresetStrategy("2d", g, Strategy(Mesh({4})));
  ASSERT_FALSE(two_d.ok());
  EXPECT_NE(two_d.status().message().find("needs a 2-D mesh"), std::string::npos);
  auto vgg = ExpertPresetStrategy("vgg", g, Strategy(Mesh({4})));
  ASSERT_FALSE(vgg.ok());
  EXPECT_NE(vgg.status().message().find("no conv2d"), std::string::npos);
  auto sources = ExpertPresetStrategy("megatron_sources", g, Strategy(Mesh({4})));
  ASSERT_FALSE(sources.ok());
  EXPECT_NE(sources.status().message().find("fixes only sources"), std::string::npos);
  // No conv2d signature keeps a weight split on its kernel rows: the op
  // computes replicated, the weight gathered for it, and says so.
  const OpGraph conv = testing::ConvNetModel(8, 4, 6, 10);
  auto replicated = ExpertPresetStrategy("vgg", conv, Strategy(Mesh({4})),
                                         {{"conv1.weight", NdSbp::Parse("(S(2))").value()}});
  ASSERT_TRUE(replicated.ok()) << replicated.status().message();
  EXPECT_EQ(replicated.value().strategy.signature("conv1").ToString(), "(B), (B) -> (B)");
  bool noted = false;
  for (const std::string& n : replicated.value().notes) {
    noted = noted || n.find("'conv1' (conv2d) computes replicated") != std::string::npos;
  }
  EXPECT_TRUE(noted);
  // A pin the rule does not produce is refused, naming it.
  auto pinned =
      ExpertPresetStrategy("megatron", g, Strategy(Mesh({4})),
                           {{"h.0.attn.qkv/matmul/out_0", NdSbp::Parse("(S(0))").value()}});
  ASSERT_FALSE(pinned.ok());
  EXPECT_NE(pinned.status().message().find("h.0.attn.qkv/matmul/out_0"), std::string::npos);
}

TEST(ExpertRulesTest, PlannedByNameCostsTheRuleStrategyAndAutoddlIsNoWorse) {
  const OpGraph g = TinyGpt();
  const Placement mesh = Mesh({2, 2});
  auto model = BuildCostModel(g, Strategy(mesh), TwoLevelCluster()).value();
  PlanOptions o;
  o.searcher = "autoddl";
  const double autoddl = PlanWithModel(g, model, o).value().solution.total_seconds;
  for (const std::string name : {"data_parallel", "megatron", "2d", "zero"}) {
    SCOPED_TRACE(name);
    o.searcher = name;
    auto planned = PlanWithModel(g, model, o);
    ASSERT_TRUE(planned.ok()) << planned.status().message();
    const ExpertPresetPlan p = Plan(name, g, mesh);
    EXPECT_EQ(planned.value().strategy.signatures(), p.strategy.signatures());
    EXPECT_EQ(planned.value().strategy.sources(), p.strategy.sources());
    EXPECT_LE(autoddl, planned.value().solution.total_seconds * (1 + 1e-12));
  }
  // Data parallel follows the rule everywhere on this graph (the loss's
  // mean gives P), so its plan carries no note; a replicated conv elsewhere
  // (ConvNet above) shows the note.
  o.searcher = "data_parallel";
  EXPECT_EQ(PlanWithModel(g, model, o).value().stats.note.find("could not follow the rule"),
            std::string::npos);
}

}  // namespace
}  // namespace ofl
