"""Checkpoints across plans: two AdamW steps under one plan, saved, loaded
under another plan (other device count, other SBP) or eagerly, two more
steps: the losses equal the uninterrupted run's (float32, rtol 1e-4, atol
1e-5), so parameters and optimizer state both survived. Plus the errors
for a truncated checkpoint and one of another model."""
from __future__ import annotations

import os

import numpy as np
import pytest

import oneflow_lite as flow
from oneflow_lite import checkpoint
from test_graph import CLUSTER, MESH, TrainGraph, batches, eager_losses, graph_losses, make_model

FLAT2 = flow.placement("cpu", [0, 1])


def graph_for(name, placement, searcher, seed=0):
    model = make_model(name, seed)
    graph = TrainGraph(model, flow.optim.AdamW(model.named_parameters(), lr=0.01))
    if placement is not None:
        graph.config.auto_parallel(cluster=CLUSTER, searcher=searcher, placement=placement)
    return graph


def test_saved_under_one_plan_resumes_under_another(tmp_path):
    data = batches("gpt", steps=4)
    want = graph_losses(graph_for("gpt", MESH, "megatron"), data)
    first = graph_for("gpt", MESH, "megatron")
    graph_losses(first, data[:2])
    first.save(str(tmp_path / "ck"), model="gpt")
    second = graph_for("gpt", FLAT2, "data_parallel", seed=7)  # other init: the load must win
    second.load(str(tmp_path / "ck"), model="gpt")
    got = graph_losses(second, data[2:])
    np.testing.assert_allclose(got, want[2:], rtol=1e-4, atol=1e-5)
    assert first.compiled.session.strategy() != second.compiled.session.strategy()
    index = checkpoint.read_index(str(tmp_path / "ck"))
    names = {e["name"] for e in index["tensors"]}
    assert "h.0.attn.qkv.weight/m" in names and "h.0.attn.qkv.weight/step" in names


def test_eager_and_graph_checkpoints_interchange(tmp_path):
    data = batches("mlp", steps=4)
    eager = make_model("mlp")
    want = eager_losses(eager, flow.optim.AdamW(eager.named_parameters(), lr=0.01), data)
    # eager two steps -> checkpoint -> graph on 4 devices two steps
    model = make_model("mlp")
    opt = flow.optim.AdamW(model.named_parameters(), lr=0.01)
    eager_losses(model, opt, data[:2])
    checkpoint.save_eager(str(tmp_path / "eager"), model, opt, "mlp")
    graph = graph_for("mlp", MESH, "autoddl", seed=3)
    graph.load(str(tmp_path / "eager"))
    np.testing.assert_allclose(graph_losses(graph, data[2:]), want[2:], rtol=1e-4, atol=1e-5)
    # graph two steps -> checkpoint -> eager two steps
    graph = graph_for("mlp", MESH, "data_parallel")
    graph_losses(graph, data[:2])
    graph.save(str(tmp_path / "graph"), model="mlp")
    model = make_model("mlp", seed=5)
    opt = flow.optim.AdamW(model.named_parameters(), lr=0.01)
    checkpoint.load_eager(str(tmp_path / "graph"), model, opt, "mlp")
    np.testing.assert_allclose(eager_losses(model, opt, data[2:]), want[2:], rtol=1e-4,
                               atol=1e-5)


def test_truncated_checkpoint_and_another_models_are_refused(tmp_path):
    graph = graph_for("mlp", None, None)
    graph_losses(graph, batches("mlp", steps=1))
    path = str(tmp_path / "ck")
    graph.save(path, model="mlp")
    file = os.path.join(path, "tensors", "00002.npy")
    size = os.path.getsize(file)
    with open(file, "r+b") as f:
        f.truncate(size // 2)
    with pytest.raises(checkpoint.CheckpointError, match=rf"00002.npy .* has {size // 2} bytes"):
        graph_for("mlp", None, None).load(path)
    other = graph_for("gpt", None, None)
    graph_losses(other, batches("gpt", steps=1))
    other.save(str(tmp_path / "gpt"), model="gpt")
    mlp = graph_for("mlp", None, None)
    graph_losses(mlp, batches("mlp", steps=1))
    before = mlp.state_dict()
    with pytest.raises(checkpoint.CheckpointError, match="belongs to model 'gpt', not 'mlp'"):
        mlp.load(str(tmp_path / "gpt"), model="mlp")
    with pytest.raises(checkpoint.CheckpointError, match=r"missing \d+: .*unexpected \d+: "
                                                         r"wte.weight"):
        mlp.load(str(tmp_path / "gpt"))
    for k, v in mlp.state_dict().items():  # nothing changed
        np.testing.assert_array_equal(v.numpy(), before[k].numpy())
