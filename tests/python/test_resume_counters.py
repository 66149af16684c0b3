"""Counters besides the random stream's position survive a resume.

nn.Graph's step count (``Compiled.steps``, the checkpoint meta's "steps"):
N steps, save, load into a fresh graph, M steps and save again writes N + M,
and (with a StepLR scheduler and dropout, float64) the M steps' losses and
the final parameters equal, bitwise, those of one graph trained N + M steps
uninterrupted, the oracle. A malformed count is refused before anything
loads.
"""
from __future__ import annotations

import json

import pytest

import oneflow_lite as flow
import zero_cases as zc
from oneflow_lite import checkpoint
from test_graph import TrainGraph

N, M = 2, 2
MODEL, DTYPE = "gpt", "float64"


def scheduled_graph():
    """zero_cases' GPT (dropout 0.1, float64) under AdamW halving its rate every step."""
    flow.manual_seed(3)
    model = flow.models.create(MODEL, zc.CONFIGS[MODEL]).double()
    opt = flow.optim.AdamW(model.named_parameters(), **zc.ADAMW)
    sched = flow.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
    return model, TrainGraph(model, opt, sched)


def run(graph, data) -> list:
    return [graph(flow.tensor(x), flow.tensor(y)).numpy().tobytes() for x, y in data]


def params(model) -> dict:
    return {k: v.numpy().tobytes() for k, v in model.state_dict().items()}


@pytest.mark.parametrize("sharded", [False, True])
def test_graph_step_count_survives_a_resume(tmp_path, sharded):
    data = zc.batches(MODEL, DTYPE, steps=N + M)
    whole_model, whole = scheduled_graph()
    want = run(whole, data)
    whole.save(str(tmp_path / "whole"), model=MODEL, sharded=sharded)
    assert checkpoint.read_index(str(tmp_path / "whole"))["meta"]["steps"] == N + M

    _, first = scheduled_graph()
    run(first, data[:N])
    first.save(str(tmp_path / "first"), model=MODEL, sharded=sharded)
    model, second = scheduled_graph()
    second.load(str(tmp_path / "first"))
    got = run(second, data[N:])
    assert second.compiled.steps == N + M
    second.save(str(tmp_path / "second"), model=MODEL, sharded=sharded)
    assert checkpoint.read_index(str(tmp_path / "second"))["meta"]["steps"] == N + M
    assert got == want[N:]
    assert params(model) == params(whole_model)


@pytest.mark.parametrize("steps", [-1, 1.5, True, "2"])
def test_a_malformed_step_count_is_refused(tmp_path, steps):
    data = zc.batches(MODEL, DTYPE, steps=1)
    _, g = scheduled_graph()
    run(g, data)
    g.save(str(tmp_path / "ck"), model=MODEL, sharded=False)
    index = checkpoint.read_index(str(tmp_path / "ck"))
    path = tmp_path / "ck" / "index.json"
    index["meta"]["steps"] = steps
    path.write_text(json.dumps(index))
    _, fresh = scheduled_graph()
    with pytest.raises(checkpoint.CheckpointError, match="meta 'steps' is"):
        fresh.load(str(tmp_path / "ck"))
    assert fresh._compiled is None and fresh._pending_checkpoint is None

