"""The rule-based expert presets (graph/expert_presets.h) run: each preset's
strategy for a GPT and an MLP (data_parallel, megatron, 2d, zero) and a
small VGG (vgg), on meshes [2], [4] and [2, 2] (2d: a 2-D mesh only),
trained for three SGD steps with momentum and weight decay in a
DistributedSession, gives the losses and parameters of the single-device
session (float32, rtol 1e-4, atol 1e-5), as test_distributed.py holds
random strategies to. The source presets keep their names with
"_sources"; a 2d preset on a flat mesh is refused with the reason."""
from __future__ import annotations

import numpy as np
import pytest

import oneflow_lite as flow
from oneflow_lite import _C
from oneflow_lite.models import GPTConfig, MLPConfig, VGGConfig, trace_loss

STEPS = 3
SGD = {"lr": 0.05, "momentum": 0.9, "weight_decay": 0.01}
CLUSTER = "h100_8gpu"  # the rule-based presets choose nothing by cost
MESHES = ([2], [4], [2, 2])
MODELS = {
    # 4 heads, batch 4: every head and batch split on [4] and [2, 2] is even.
    "gpt": (GPTConfig(vocab_size=16, seq_len=4, n_layer=1, n_head=4, n_embd=16, dropout=0.1),
            4),
    "mlp": (MLPConfig(in_features=8, hidden=(16,), num_classes=4, dropout=0.1), 8),
    "vgg": (VGGConfig(features=(4, "M"), in_channels=3, image_size=4, fc=(8,), num_classes=4,
                      dropout=0.1), 4),
}
CASES = [(preset, model, mesh) for model in ("gpt", "mlp")
         for preset in ("data_parallel", "megatron", "2d", "zero") for mesh in MESHES
         if preset != "2d" or len(mesh) == 2] + [("vgg", "vgg", mesh) for mesh in MESHES]


def batches(name: str, config, batch: int) -> list:
    rng = np.random.default_rng(7)
    out = []
    for _ in range(STEPS):
        if name == "mlp":
            data = rng.standard_normal((batch, config.in_features)).astype(np.float32)
            labels = rng.integers(0, config.num_classes, size=(batch,))
        elif name == "gpt":
            data = rng.integers(0, config.vocab_size, size=(batch, config.seq_len))
            labels = rng.integers(0, config.vocab_size, size=(batch, config.seq_len))
        else:
            shape = (batch, config.in_channels, config.image_size, config.image_size)
            data = rng.standard_normal(shape).astype(np.float32)
            labels = rng.integers(0, config.num_classes, size=(batch,))
        out.append((data, labels.astype(np.int64)))
    return out


def train(session, g, data) -> list:
    return [float(session.run({g.data: x, g.labels: y}, [g.loss])[0]) for x, y in data]


def test_searchers_name_both_families():
    names = list(_C.searchers())
    for preset in ("data_parallel", "megatron", "2d", "zero", "vgg", "data_parallel_sources",
                   "megatron_sources", "2d_sources", "vgg_sources"):
        assert preset in names


@pytest.mark.parametrize("preset,model,mesh", CASES,
                         ids=[f"{p}-{m}-{'x'.join(map(str, h))}" for p, m, h in CASES])
def test_preset_trains_as_one_device(preset, model, mesh):
    config, batch = MODELS[model]
    flow.manual_seed(3)
    module = flow.models.create(model, config)
    g = trace_loss(module, batch)
    g.builder.minimize(g.loss, "sgd", **SGD)
    params = sorted(g.trainable)
    data = batches(model, config, batch)
    single = g.builder.session(num_threads=1)
    want = train(single, g, data)
    planned = _C.plan(g.program, mesh, CLUSTER, preset)
    ranks = list(range(int(np.prod(mesh))))
    dist = _C.DistributedSession(g.program, ranks, mesh, planned.strategy, [g.loss],
                                 num_threads=2, timeout_ms=30000)
    got = train(dist, g, data)
    where = f"{preset} on {model} {mesh}\n{dist.strategy()}"
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5, err_msg=where)
    for p in params:
        np.testing.assert_allclose(dist.get_variable(p), single.get_variable(p), rtol=1e-4,
                                   atol=1e-5, err_msg=f"{p}: {where}")


def test_megatron_layout_of_the_traced_gpt():
    """The traced flow.models.GPT (not a hand-built graph) gets Megatron's
    layout: column-parallel qkv and fc, row-parallel proj, heads split."""
    config, batch = MODELS["gpt"]
    g = trace_loss(flow.models.create("gpt", config), batch)
    g.builder.minimize(g.loss, "sgd", **SGD)
    planned = _C.plan(g.program, [4], CLUSTER, "megatron")
    strategy = planned.strategy
    sources = strategy.sources
    assert sources["h.0.attn.qkv.weight"] == "(S(0))"
    assert sources["h.0.mlp.fc.weight"] == "(S(0))"
    assert sources["h.0.attn.proj.weight"] == "(S(1))"
    assert sources["h.0.mlp.proj.weight"] == "(S(1))"
    assert sources["head.weight"] == "(S(0))"
    signatures = strategy.signatures
    for column in ("h.0.attn.qkv/matmul", "h.0.mlp.fc/matmul", "head/matmul"):
        assert signatures[column] == "(B), (S(0)) -> (S(1))", column
    for row in ("h.0.attn.proj/matmul", "h.0.mlp.proj/matmul"):
        assert signatures[row] == "(S(1)), (S(1)) -> (P)", row
    for attention in ("h.0.attn/batch_matmul", "h.0.attn/batch_matmul_1"):
        assert signatures[attention] == "(S(1)), (S(1)) -> (S(1))", attention  # by heads
    # Vocabulary-parallel embedding: wte split on the vocabulary, output P.
    assert sources["wte.weight"] == "(S(0))"
    assert sources["wpe.weight"] == "(B)"
    assert signatures["wte/embedding"] == "(S(0)), (B) -> (P)"
    # No class-split loss among the ops: the logits are gathered, noted.
    assert "'sparse_softmax_cross_entropy' (sparse_softmax_cross_entropy) gathers" in \
        planned.stats["note"]


def test_2d_on_a_flat_mesh_says_why():
    config, batch = MODELS["mlp"]
    g = trace_loss(flow.models.create("mlp", config), batch)
    with pytest.raises(ValueError, match="needs a 2-D mesh"):
        _C.plan(g.program, [4], CLUSTER, "2d")
