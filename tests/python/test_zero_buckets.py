"""Reduce-scatter buckets (graph/gradient_buckets.h): under the zero preset
the gradients boxed P -> S(0) fuse into buckets, one reduce-scatter each,
and the result is bitwise that of each gradient reduce-scattered alone
(every element is summed on the same rank in the same order: the
communicators sum a rank's own part, then its peers' in rank order, and a
bucket puts each member's shard in its destination's part), on [4] and
[2, 2], and with 2 micro-batches per step (the buckets then fuse the
accumulated gradients); the bytes the communicators count per step equal the planner's
prediction with buckets (api/planning.h PredictedBytesSent), and the
step-time model's buckets are reduce-scatters of several gradients. The
update itself is held to data_parallel in test_zero_update.py."""
from __future__ import annotations

import numpy as np
import pytest

import zero_cases as zc
from oneflow_lite import _C

BUCKET = 1 << 20
MESHES = ([4], [2, 2])
CASES = [(m, d, h) for m in ("mlp", "gpt") for d in ("float32", "float64") for h in MESHES]
IDS = [f"{m}-{d}-{'x'.join(map(str, h))}" for m, d, h in CASES]


def trained(model: str, dtype: str, mesh, bucket: int):
    g, params = zc.build(model, dtype)
    s = zc.session(g, "zero", 4, bucket, mesh=mesh)
    losses = zc.train(s, g, zc.batches(model, dtype))
    return s, losses, {p: s.get_variable(p) for p in params}


@pytest.mark.parametrize("model,dtype,mesh", CASES, ids=IDS)
def test_bucketed_reduce_scatter_is_bitwise_the_unbucketed(model, dtype, mesh):
    alone, want_losses, want = trained(model, dtype, mesh, 0)
    fused, got_losses, got = trained(model, dtype, mesh, BUCKET)
    assert b"bucket0/concat" in fused.plan_bytes()  # a bucket really runs
    assert b"bucket0/concat" not in alone.plan_bytes()
    assert got_losses == want_losses
    for p, value in want.items():
        assert got[p].dtype == value.dtype and np.array_equal(got[p], value), p
    # And the pair is the replicated update (tolerance of the acceptance).
    g, params = zc.build(model, dtype)
    dp = zc.session(g, "data_parallel", 4, 0, mesh=mesh)
    np.testing.assert_allclose(zc.train(dp, g, zc.batches(model, dtype)), got_losses,
                               **zc.TOL[dtype])
    for p in params:
        np.testing.assert_allclose(got[p], dp.get_variable(p), **zc.TOL[dtype], err_msg=p)


@pytest.mark.parametrize("mesh", MESHES, ids=["4", "2x2"])
@pytest.mark.parametrize("bucket", [0, 64, BUCKET])
def test_bytes_predicted_equal_measured(mesh, bucket):
    g, _ = zc.build("gpt", "float32")
    planned = _C.plan(g.program, list(mesh), zc.CLUSTER, "zero")
    s = zc.session(g, "zero", 4, bucket, mesh=mesh)
    data = zc.batches("gpt", "float32", steps=2)
    zc.train(s, g, data[:1])
    before = dict(s.bytes_sent())
    zc.train(s, g, data[1:])
    sent = {r: v - before.get(r, 0) for r, v in dict(s.bytes_sent()).items()}
    assert sent == dict(planned.predicted_bytes_with_buckets(bucket))
    assert all(v > 0 for v in sent.values())


def test_the_step_model_buckets_the_reduce_scatters():
    g, _ = zc.build("gpt", "float32")
    alone = _C.plan(g.program, [4], zc.CLUSTER, "zero", gradient_bucket_bytes=0,
                    overlap_gradients=False).step_estimate
    fused = _C.plan(g.program, [4], zc.CLUSTER, "zero", gradient_bucket_bytes=BUCKET,
                    overlap_gradients=False).step_estimate
    scatters = [b for b in fused["buckets"] if b["collective"] == "reduce_scatter"]
    members = sum(len(b["gradients"]) for b in scatters)
    assert any(len(b["gradients"]) > 1 for b in scatters)
    # The same bytes in fewer collectives: each bucket saves its members'
    # latencies (3 ring steps of 5 us on h100_8gpu's NVLink) but one.
    alone_rs = [b for b in alone["buckets"] if b["collective"] == "reduce_scatter"]
    assert len(alone_rs) == members > len(scatters)
    assert sum(b["sent_bytes"] for b in alone_rs) == sum(b["sent_bytes"] for b in scatters)
    saved = sum(b["seconds"] for b in alone_rs) - sum(b["seconds"] for b in scatters)
    np.testing.assert_allclose(saved, (members - len(scatters)) * 3 * 5e-6, rtol=1e-9, atol=0)


def test_micro_batches_bucket_the_accumulated_gradients():
    """2 micro-batches per step on [4] (float64): zero with buckets is
    bitwise zero without, and data_parallel's update at rtol 1e-12."""
    data = zc.batches("gpt", "float64", steps=4)
    got = {}
    for preset, bucket in (("zero", 0), ("zero", BUCKET), ("data_parallel", 0)):
        g, params = zc.build("gpt", "float64")
        s = zc.session(g, preset, 4, bucket, micro_batches=2)
        losses = [np.asarray(s.run([{g.data: x, g.labels: y} for x, y in data[i:i + 2]],
                                   [g.loss])[0], np.float64).ravel().tolist() for i in (0, 2)]
        got[(preset, bucket)] = (losses, {p: s.get_variable(p) for p in params})
    a, b, dp = got[("zero", 0)], got[("zero", BUCKET)], got[("data_parallel", 0)]
    assert a[0] == b[0] and all(np.array_equal(a[1][p], b[1][p]) for p in a[1])
    assert len(b[0]) == 2
    np.testing.assert_allclose(b[0], dp[0], **zc.TOL["float64"])
    for p in dp[1]:
        np.testing.assert_allclose(b[1][p], dp[1][p], **zc.TOL["float64"], err_msg=p)
