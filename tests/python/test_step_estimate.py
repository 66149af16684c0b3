"""The full step-time model from Python (graph/cost_model_buckets.h):
``PlannedStrategy.step_estimate`` and the gradient_bucket_bytes /
overlap_gradients options, checked against the ring formula by hand on the
h100_8gpu preset's NVLink level (450 GB/s, 5 us per step)."""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
from search_models import build_program  # noqa: E402

from oneflow_lite import _C  # noqa: E402

CLUSTER = "h100_8gpu"
LATENCY, BANDWIDTH = 5e-6, 450e9


def _mlp():
    # 3 Linear layers of 1024 features: weights 4 MiB, biases 4 KiB (float32).
    program, _ = build_program("mlp", layers=3, batch=256, hidden=1024)
    return program


def _all_reduce_on_4(sent_bytes):
    return 2 * 3 * LATENCY + sent_bytes / BANDWIDTH


def test_buckets_of_data_parallel_by_hand():
    program = _mlp()
    mib = 1 << 20
    planned = _C.plan(program, [4], CLUSTER, "data_parallel", gradient_bucket_bytes=6 * mib,
                      overlap_gradients=False)
    est = planned.step_estimate
    grads = [g for b in est["buckets"] for g in b["gradients"]]
    assert len(grads) == len(set(grads)) == 6  # 3 weights and 3 biases, each once
    for b in est["buckets"]:
        assert b["collective"] == "all_reduce" and b["group_size"] == 4
        assert b["sent_bytes"] == b["buffer_bytes"] * 3 // 2  # 2 (p - 1) / p of the buffer
        assert np.isclose(b["seconds"], _all_reduce_on_4(b["sent_bytes"]), rtol=1e-12, atol=0)
    # In order of readiness: the last layer's bias and weight (4 KiB + 4 MiB),
    # the middle one's bias, then its weight closes the first bucket at
    # 8 MiB + 8 KiB >= 6 MiB; the first layer's fills the second.
    sizes = [b["buffer_bytes"] for b in est["buckets"]]
    assert sizes == [2 * 4 * mib + 2 * 4096, 4 * mib + 4096]
    assert sum(sizes) == 3 * (4 * mib + 4096)
    # Serial: every bucket after backward.
    assert np.isclose(est["exposed_gradient_s"], est["gradient_s"], rtol=1e-12, atol=0)
    assert np.isclose(est["total_s"], est["compute_s"] + est["transfer_s"] + est["gradient_s"],
                      rtol=1e-12, atol=0)
    # No bucketing: one collective per gradient, each with its own latency.
    alone = _C.plan(program, [4], CLUSTER, "data_parallel", gradient_bucket_bytes=0,
                    overlap_gradients=False).step_estimate
    assert len(alone["buckets"]) == 6
    assert np.isclose(alone["gradient_s"] - est["gradient_s"],
                      (6 - len(est["buckets"])) * 6 * LATENCY, rtol=1e-9, atol=0)


def test_overlap_hides_gradients_behind_backward():
    # Buckets of 6 MiB (two here): the first runs while the first layer's
    # backward does. With the default 25 MiB all 12 MiB are one bucket,
    # ready only when backward ends.
    program, bucket = _mlp(), 6 << 20
    serial = _C.plan(program, [4], CLUSTER, "data_parallel", overlap_gradients=False,
                     gradient_bucket_bytes=bucket)
    overlapped = _C.plan(program, [4], CLUSTER, "data_parallel", gradient_bucket_bytes=bucket)
    a, b = serial.step_estimate, overlapped.step_estimate
    assert b["exposed_gradient_s"] < a["exposed_gradient_s"]
    assert b["total_s"] < a["total_s"]
    assert b["buckets"][0]["start_s"] < b["backward_s"]
    assert b["proxy_total_s"] == overlapped.predicted_step_s


def test_bad_bucket_size_is_named():
    with pytest.raises(ValueError, match="gradient_bucket_bytes=-1"):
        _C.plan(_mlp(), [4], CLUSTER, "data_parallel", gradient_bucket_bytes=-1)


def test_bucketed_bytes_predicted_equal_measured():
    """A data-parallel MLP whose gradients (5 x 7, 7, 7 x 3, 3 floats) do not
    divide by the group of 3: fused, the ring chunks their concatenation,
    not each; the planner's count follows the session's buckets exactly."""
    import oneflow_lite as flow
    from oneflow_lite.models import MLPConfig, trace_loss

    flow.manual_seed(3)
    model = flow.models.create("mlp", MLPConfig(in_features=5, hidden=(7,), num_classes=3))
    g = trace_loss(model, 6)
    g.builder.minimize(g.loss, "sgd", lr=0.1)
    planned = _C.plan(g.program, [3], CLUSTER, "data_parallel")
    rng = np.random.default_rng(0)
    feeds = {g.data: rng.standard_normal((6, 5)).astype(np.float32),
             g.labels: rng.integers(0, 3, size=(6,))}
    sent = {}
    for bucket in (0, 1 << 20):
        session = _C.DistributedSession(g.program, [0, 1, 2], [3], planned.strategy, [g.loss],
                                        num_threads=1, gradient_bucket_bytes=bucket)
        session.run(feeds, [g.loss])
        before = dict(session.bytes_sent())
        session.run(feeds, [g.loss])
        after = dict(session.bytes_sent())
        sent[bucket] = {r: after[r] - before.get(r, 0) for r in after}
        assert sent[bucket] == dict(planned.predicted_bytes_with_buckets(bucket)), bucket
    assert sent[0] != sent[1 << 20]  # the fused ring really chunks differently
    assert dict(planned.predicted_bytes) == sent[1 << 20]  # the session's default: 25 MiB
