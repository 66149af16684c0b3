"""Checkpoints between eager and nn.Graph for every zoo model (MLP, GPT, VGG):
eager (after one AdamW step, so optimizer state exists) -> checkpoint ->
a compiled graph on 4 devices, and the reverse. The values that arrive are
compared bitwise with the source's. Non-persistent buffers (GPT's causal
mask, ``register_buffer(..., persistent=False)``) are not state: they are
in neither the eager nor the graph state_dict, nor in the checkpoint."""
from __future__ import annotations

import numpy as np
import pytest

import oneflow_lite as flow
from oneflow_lite import checkpoint
from test_graph import CLUSTER, MESH, TrainGraph, batches, eager_losses, make_model

MODELS = ["mlp", "gpt", "vgg"]


def trained_eager(name, seed):
    model = make_model(name, seed)
    opt = flow.optim.AdamW(model.named_parameters(), lr=0.01)
    eager_losses(model, opt, batches(name, steps=1, seed=seed))
    return model, opt


def trained_graph(name, seed):
    model = make_model(name, seed)
    graph = TrainGraph(model, flow.optim.AdamW(model.named_parameters(), lr=0.01))
    graph.config.auto_parallel(cluster=CLUSTER, searcher="data_parallel", placement=MESH)
    x, y = batches(name, steps=1, seed=seed)[0]
    graph(x, y)
    return model, graph


def assert_bitwise(got, want):
    assert sorted(got) == sorted(want)
    for k in want:
        a, b = np.asarray(got[k]), np.asarray(want[k])
        assert a.dtype == b.dtype and a.shape == b.shape, k
        assert a.tobytes() == b.tobytes(), k


@pytest.mark.parametrize("name", MODELS)
def test_eager_checkpoint_loads_into_a_graph_bitwise(tmp_path, name):
    model, opt = trained_eager(name, seed=0)
    source = checkpoint.eager_tensors(model, opt)
    assert not any(k.endswith(".mask") for k in source)
    checkpoint.save_eager(str(tmp_path / "ck"), model, opt, name)
    _, graph = trained_graph(name, seed=5)  # other values: the load must replace them all
    graph.load(str(tmp_path / "ck"), model=name)
    got = {k: v.numpy() for k, v in graph.state_dict().items()}
    assert_bitwise(got, source)


@pytest.mark.parametrize("name", MODELS)
def test_graph_checkpoint_loads_into_eager_bitwise(tmp_path, name):
    _, graph = trained_graph(name, seed=0)
    source = {k: v.numpy() for k, v in graph.state_dict().items()}
    graph.save(str(tmp_path / "ck"), model=name)
    saved = {e["name"] for e in checkpoint.read_index(str(tmp_path / "ck"))["tensors"]}
    assert saved == set(source) and not any(k.endswith(".mask") for k in saved)
    model, opt = trained_eager(name, seed=5)
    masks = {k: b.numpy().copy() for k, b in model.named_buffers() if k.endswith(".mask")}
    assert (name == "gpt") == bool(masks)
    checkpoint.load_eager(str(tmp_path / "ck"), model, opt, name)
    assert_bitwise(checkpoint.eager_tensors(model, opt), source)
    for k, b in model.named_buffers():  # the mask is the model's own, untouched
        if k in masks:
            assert b.numpy().tobytes() == masks[k].tobytes()


def test_graph_state_dict_leaves_out_non_persistent_buffers():
    model, graph = trained_graph("gpt", seed=0)
    state = graph.state_dict()
    assert "h.0.attn.mask" not in state and "h.0.attn.qkv.weight" in state
    assert "h.0.attn.mask" in graph.compiled.variables  # still a variable of the plan
    eager_keys = set(model.state_dict())
    assert {k for k in state if not checkpoint.is_state(k)} == eager_keys
    with pytest.raises(KeyError, match="unknown variables h.0.attn.mask"):
        graph.load_state_dict({"h.0.attn.mask": np.zeros((8, 8), np.float32)})
