"""A partial-sum loss seeds backward without an all-reduce (ops/array/fill.cpp:
ones_like takes P and makes B, since d(sum_r L_r)/dL_r = 1 on every rank).

The model: y = (x @ W1) @ W2, loss = sum((y - t)^2), float64. Under the
data_parallel preset the sum over a batch split is a partial sum, so the
loss is P and the seed reads it as P. Three SGD steps with momentum on [2]
and [2, 2] equal numpy's (the oracle, gradients written out below), and each
rank sends only the gradients' all-reduce: one bucket of the two gradients,
50 float64 = 400 bytes, of which a ring all-reduce on p ranks sends
2 (p - 1) / p x 400 per rank and step (the loss's all-reduce would add to it).
"""
import numpy as np
import pytest

from oneflow_lite import _C
from oneflow_lite.graph_builder import GraphBuilder

N, D_IN, D_H, D_OUT = 8, 6, 5, 4
LR, MOMENTUM, STEPS = 0.01, 0.9, 3
CLUSTER = "h100_8gpu"  # the rule-based preset chooses nothing by cost


def init():
    rng = np.random.default_rng(5)
    return {"w1": rng.standard_normal((D_IN, D_H)), "w2": rng.standard_normal((D_H, D_OUT))}


def data():
    rng = np.random.default_rng(6)
    return [(rng.standard_normal((N, D_IN)), rng.standard_normal((N, D_OUT)))
            for _ in range(STEPS)]


def build():
    b = GraphBuilder()
    x, t = b.input("x", [N, D_IN], "float64"), b.input("t", [N, D_OUT], "float64")
    params = init()
    w1, w2 = b.variable("w1", params["w1"]), b.variable("w2", params["w2"])
    d = b.sub(b.matmul(b.matmul(x, w1), w2), t)
    loss = b.reduce_sum(b.mul(d, d))
    b.minimize(loss, "sgd", lr=LR, momentum=MOMENTUM)
    return b, loss


def numpy_train(batches):
    p, buf, losses = init(), {"w1": 0.0, "w2": 0.0}, []
    for x, t in batches:
        h = x @ p["w1"]
        r = h @ p["w2"] - t
        dy = 2 * r
        g = {"w1": x.T @ (dy @ p["w2"].T), "w2": h.T @ dy}
        losses.append(float(np.sum(r ** 2)))
        for k in p:
            buf[k] = MOMENTUM * buf[k] + g[k]
            p[k] = p[k] - LR * buf[k]
    return losses, p


@pytest.mark.parametrize("mesh", [[2], [2, 2]], ids=["2", "2x2"])
def test_partial_sum_loss_trains_without_an_all_reduce_before_backward(mesh):
    b, loss = build()
    batches = data()
    want_losses, want = numpy_train(batches)
    planned = _C.plan(b.program, mesh, CLUSTER, "data_parallel")
    ranks = list(range(int(np.prod(mesh))))
    dist = _C.DistributedSession(b.program, ranks, mesh, planned.strategy, [loss],
                                 num_threads=2, timeout_ms=30000)
    text = dist.strategy()
    seed = [line for line in text.splitlines() if line.startswith("grad/seed")]
    partial, broadcast = ", ".join(["P"] * len(mesh)), ", ".join(["B"] * len(mesh))
    assert len(seed) == 1 and f"({partial}) -> ({broadcast})" in seed[0], text
    losses = [float(dist.run({"x": x, "t": t}, [loss])[0]) for x, t in batches]
    np.testing.assert_allclose(losses, want_losses, rtol=1e-12, atol=1e-14)
    for k in want:
        np.testing.assert_allclose(dist.get_variable(k), want[k], rtol=1e-12, atol=1e-14)
    # Bytes per rank: only the gradients' fused all-reduce, axis by axis
    # (each axis of 2 ranks: 2 (2 - 1) / 2 x 400 = 400 bytes).
    per_step = 400 * len(mesh)
    assert dict(dist.bytes_sent()) == {r: STEPS * per_step for r in ranks}, text
