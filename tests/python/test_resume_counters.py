"""Counters besides the random stream's position survive a resume.

nn.Graph's step count (``Compiled.steps``, the checkpoint meta's "steps"):
N steps, save, load into a fresh graph, M steps and save again writes N + M,
and (with a StepLR scheduler and dropout, float64) the M steps' losses and
the final parameters equal, bitwise, those of one graph trained N + M steps
uninterrupted, the oracle. A malformed count is refused before anything
loads; an eager checkpoint's count comes from AdamW's step counter.

Eager Dropout counters (``checkpoint.save_eager``'s "dropout" field): N + M
eager steps equal N, save_eager, load_eager into a fresh model, M, bitwise
(losses and parameters), the uninterrupted run the oracle; a checkpoint
without counters loads with a RuntimeWarning, malformed ones are refused.
A graph's checkpoint (no counters, a session position) sets every counter
to the position: N graph steps, save, load_eager, M eager steps equal the
uninterrupted graph's N + M within zero_cases' float64 tolerance.
"""
from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

import oneflow_lite as flow
import zero_cases as zc
from oneflow_lite import checkpoint, nn
from oneflow_lite.nn import functional as F
from test_graph import TrainGraph

N, M = 2, 2
MODEL, DTYPE = "gpt", "float64"


def scheduled_graph(halving: bool = True):
    """zero_cases' GPT (dropout 0.1, float64) under AdamW, its rate halved
    every step when ``halving``."""
    flow.manual_seed(3)
    model = flow.models.create(MODEL, zc.CONFIGS[MODEL]).double()
    opt = flow.optim.AdamW(model.named_parameters(), **zc.ADAMW)
    sched = flow.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5) if halving else None
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


def eager_model():
    """The same GPT, eager, under AdamW (float64)."""
    flow.manual_seed(3)
    model = flow.models.create(MODEL, zc.CONFIGS[MODEL]).double()
    return model, flow.optim.AdamW(model.named_parameters(), **zc.ADAMW)


def eager_run(model, opt, data) -> list:
    losses = []
    for x, y in data:
        loss = F.cross_entropy(model(flow.tensor(x)), flow.tensor(y))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.numpy().tobytes())
    return losses


def eager_saved(tmp_path, data):
    """N eager steps saved by save_eager to tmp_path/ck."""
    model, opt = eager_model()
    eager_run(model, opt, data[:N])
    checkpoint.save_eager(str(tmp_path / "ck"), model, opt, MODEL)
    return model


def test_eager_dropout_resumes_bitwise(tmp_path):
    data = zc.batches(MODEL, DTYPE, steps=N + M)
    whole, whole_opt = eager_model()
    want = eager_run(whole, whole_opt, data)
    saved = eager_saved(tmp_path, data)
    model, opt = eager_model()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        checkpoint.load_eager(str(tmp_path / "ck"), model, opt, MODEL)
    assert eager_run(model, opt, data[N:]) == want[N:]
    assert params(model) == params(whole)
    names = [n for n, m in saved.named_modules() if isinstance(m, nn.Dropout)]
    assert len(names) > 1  # the blocks' and the attention's
    assert checkpoint.read_index(str(tmp_path / "ck"))["dropout"] == {n: N for n in names}
    assert {n: m.iteration for n, m in model.named_modules() if n in names} == {
        n: N + M for n in names}


def rewrite_counters(path, counters) -> None:
    """Replaces (None: removes) the index's "dropout" field, as an older version wrote."""
    file = path / "index.json"
    index = json.loads(file.read_text())
    if counters is None:
        del index["dropout"]
    else:
        index["dropout"] = counters
    file.write_text(json.dumps(index))


def test_an_eager_checkpoint_without_counters_loads_and_warns(tmp_path):
    data = zc.batches(MODEL, DTYPE, steps=N)
    saved = eager_saved(tmp_path, data)
    rewrite_counters(tmp_path / "ck", None)
    model, opt = eager_model()
    with pytest.warns(RuntimeWarning, match="no counter for Dropout .* own counters"):
        checkpoint.load_eager(str(tmp_path / "ck"), model, opt, MODEL)
    assert params(model) == params(saved)
    assert all(m.iteration == 0 for m in model.modules() if isinstance(m, nn.Dropout))


@pytest.mark.parametrize("field", [{"drop": -1}, {"drop": 1.5}, {"drop": True}, [1], 3])
def test_malformed_eager_counters_are_refused(tmp_path, field):
    eager_saved(tmp_path, zc.batches(MODEL, DTYPE, steps=1))
    rewrite_counters(tmp_path / "ck", field)
    model, opt = eager_model()
    before = params(model)
    with pytest.raises(checkpoint.CheckpointError, match="index.json 'dropout' is"):
        checkpoint.load_eager(str(tmp_path / "ck"), model, opt, MODEL)
    assert params(model) == before


@pytest.mark.parametrize("sharded", [False, True])
def test_a_graph_checkpoint_sets_the_eager_counters_to_its_position(tmp_path, sharded):
    data = zc.batches(MODEL, DTYPE, steps=N + M)
    _, whole = scheduled_graph(halving=False)  # a constant rate, as eager_run's
    want = [float(np.frombuffer(b)[0]) for b in run(whole, data)]
    _, first = scheduled_graph(halving=False)
    run(first, data[:N])
    first.save(str(tmp_path / "ck"), model=MODEL, sharded=sharded)
    model, opt = eager_model()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        checkpoint.load_eager(str(tmp_path / "ck"), model, opt, MODEL)
    assert {m.iteration for m in model.modules() if isinstance(m, nn.Dropout)} == {N}
    got = [float(np.frombuffer(b)[0]) for b in eager_run(model, opt, data[N:])]
    np.testing.assert_allclose(got, want[N:], **zc.TOL[DTYPE])


def test_a_graph_counts_an_eager_checkpoints_steps(tmp_path):
    """save_eager writes no step count: a graph takes AdamW's step counter."""
    data = zc.batches(MODEL, DTYPE, steps=N + M)
    eager_saved(tmp_path, data)
    _, g = scheduled_graph(halving=False)
    g.load(str(tmp_path / "ck"), model=MODEL)
    run(g, data[N:])
    g.save(str(tmp_path / "graph"), model=MODEL)
    assert checkpoint.read_index(str(tmp_path / "graph"))["meta"]["steps"] == N + M
