"""The memory model with liveness (oneflow_lite/api/memory_estimate.h) held
against what the runtime really allocates.

The measured side is the runtime, not the code under test: every rank's
allocator counts the bytes it hands out (core/allocator.h), and
``DistributedSession.peak_bytes()`` reports their peak. The model
(``PlannedStrategy.predicted_memory``) lowers the strategy into the plan the
session would run and adds up what Runtime::Create allocates for it: the
liveness arena of runtime/memory_plan.h, every buffer it keeps apart, the
undo copy of transactional steps. The runtime allocates nothing per step, so
the two agree exactly (tolerance 0 bytes) on every rank, under every
strategy and session option tried here (the undo copy too, in the arena or
in buffers of its own): a small GPT on 4 virtual devices
([2, 2]) under the presets, autoddl and a random valid strategy, with one
and two register slots, with and without gradient buckets, micro-batches and
the undo copy. The hand-worked case (a 2-layer MLP) is
tests/cpp/api/memory_estimate_test.cpp.
"""
from __future__ import annotations

import numpy as np
import pytest

import oneflow_lite as flow
from oneflow_lite import _C
from oneflow_lite.models import GPTConfig, trace_loss

CONFIG = GPTConfig(vocab_size=64, seq_len=8, n_layer=2, n_head=4, n_embd=32)
BATCH, MESH, RANKS = 8, [2, 2], [0, 1, 2, 3]
CLUSTER = "h100_8gpu"


def program():
    flow.manual_seed(0)
    g = trace_loss(flow.models.GPT(CONFIG), BATCH)
    g.builder.minimize(g.loss, "adamw", lr=1e-3, weight_decay=0.01)
    return g


def random_pins(g, seed):
    """Each trainable variable pinned to a random NdSbp (B or S(d) per axis)."""
    rng = np.random.default_rng(seed)
    pins = {}
    for name in sorted(g.trainable):
        shape = g.program.shape(name)
        parts = []
        for size in MESH:
            choices = ["B"] + [f"S({d})" for d, n in enumerate(shape) if n >= size]
            parts.append(choices[rng.integers(len(choices))])
        pins[name] = "(" + ", ".join(parts) + ")"
    return pins


def batch(micro_batches=1):
    rng = np.random.default_rng(1)
    ids = rng.integers(0, CONFIG.vocab_size, size=(BATCH * micro_batches, CONFIG.seq_len))
    return ids, np.roll(ids, -1, axis=1)


CASES = [
    # (searcher, session options)
    ("data_parallel", dict(num_slots=1)),
    ("data_parallel", dict(num_slots=2)),
    ("data_parallel", dict(num_slots=1, gradient_bucket_bytes=0)),
    ("data_parallel", dict(num_slots=1, transactional=False)),
    ("megatron", dict(num_slots=1)),
    ("2d", dict(num_slots=1)),
    ("2d", dict(num_slots=2, gradient_bucket_bytes=4096)),
    ("zero", dict(num_slots=1)),
    ("autoddl", dict(num_slots=1)),
    ("random", dict(num_slots=1)),
    ("data_parallel", dict(num_slots=2, micro_batches=2)),
]


@pytest.mark.parametrize("searcher,options", CASES,
                         ids=[f"{s}-{'-'.join(f'{k}{v}' for k, v in o.items())}"
                              for s, o in CASES])
def test_prediction_equals_the_allocators_peak(searcher, options):
    g = program()
    k = options.get("micro_batches", 1)
    if searcher == "random":
        planned = _C.plan(g.program, MESH, CLUSTER, "manual", pinned=random_pins(g, 5),
                          micro_batches=k)
    else:
        planned = _C.plan(g.program, MESH, CLUSTER, searcher, micro_batches=k)
    predicted = planned.predicted_memory([g.loss], **options)
    session = _C.DistributedSession(g.program, RANKS, MESH, planned.strategy, [g.loss],
                                    num_threads=2, timeout_ms=60000, **options)
    ids, labels = batch(k)
    if k == 1:
        session.run({g.data: ids, g.labels: labels}, [g.loss])
    else:
        parts = [{g.data: i, g.labels: l}
                 for i, l in zip(np.split(ids, k), np.split(labels, k))]
        session.run(parts, [g.loss])
    measured = list(session.peak_bytes())
    assert predicted.peak_bytes == measured, (searcher, options, str(predicted))
    # The undo copy is what the session reports as its own part of the peak.
    assert [r["undo_bytes"] for r in predicted.ranks] == list(session.undo_bytes())
    assert predicted.max_bytes == max(measured)
    # The breakdown adds up to each rank's total.
    for r in predicted.ranks:
        parts = ("arena_bytes", "parameter_bytes", "optimizer_state_bytes", "buffer_bytes",
                 "undo_bytes", "boxing_bytes", "bucket_bytes", "register_bytes")
        assert sum(r[p] for p in parts) == r["total_bytes"], r


def test_breakdown_of_data_parallel_by_hand():
    """Data parallel on [2, 2]: every rank holds every parameter whole (float32),
    Adam keeps two moments of each parameter's size and one int64 step per
    parameter, the causal masks are the other variables (B, not updated).
    The undo copy goes into the arena: with one slot per register over the
    bytes that are dead when each update runs, with two over the registers'
    spare slots (runtime/memory_plan.h); either way it costs what the
    allocators measure between the same session with and without
    transactional steps, less than the parameters and their state once more
    (a whole copy)."""
    g = program()
    planned = _C.plan(g.program, MESH, CLUSTER, "data_parallel")
    params = sum(4 * int(np.prod(g.program.shape(p))) for p in g.trainable)
    state = 2 * params + 8 * len(g.trainable)
    t = CONFIG.seq_len
    for num_slots in (2, 1):
        m = planned.predicted_memory([g.loss], num_slots=num_slots)
        measured = []
        for transactional in (True, False):
            session = _C.DistributedSession(g.program, RANKS, MESH, planned.strategy, [g.loss],
                                            num_threads=2, timeout_ms=60000,
                                            num_slots=num_slots, transactional=transactional)
            ids, labels = batch()
            session.run({g.data: ids, g.labels: labels}, [g.loss])
            measured.append(list(session.peak_bytes()))
        for r, on, off in zip(m.ranks, *measured):
            assert r["parameter_bytes"] == params
            assert r["optimizer_state_bytes"] == state
            assert r["buffer_bytes"] % (t * t) == 0 and r["buffer_bytes"] > 0  # [t, t] masks
            assert r["undo_bytes"] == on - off
            assert 0 < r["undo_bytes"] < params + state, num_slots
            if num_slots == 1:
                assert r["arena_bytes"] < r["planned_bytes"]  # liveness shares bytes
            else:
                assert r["arena_bytes"] == 0  # nothing planned: only the spare slots


def test_report_shows_the_prediction_and_bad_options_are_named():
    g = program()
    planned = _C.plan(g.program, MESH, CLUSTER, "data_parallel")
    m = planned.predicted_memory([g.loss], num_slots=1)
    assert "predicted peak memory" not in planned.report()
    text = planned.report(memory=m)
    assert "predicted peak memory (runtime model, liveness)" in text
    import json
    assert json.loads(planned.report_json(memory=m))["peak_bytes"] == m.max_bytes
    assert json.loads(planned.report_json())["peak_bytes"] is None
    with pytest.raises(ValueError, match="num_slots=0"):
        planned.predicted_memory([g.loss], num_slots=0)
    with pytest.raises(ValueError, match="gradient_bucket_bytes=-1"):
        planned.predicted_memory([g.loss], gradient_bucket_bytes=-1)
