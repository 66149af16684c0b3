"""The single-device lowering runs a matmul read only by a bias_add (a linear
layer) as one matmul_bias task (graph/matmul_bias_fusion.h), whose CPU kernel
hands the bias to oneDNN's matmul (float32) or adds it after dgemm
(float64). A training step of a two-layer MLP with biases, in float32 and
float64, against numpy's forward, backward and SGD step; the Chrome trace
shows which tasks ran. The oracle is numpy."""
from __future__ import annotations

import json

import numpy as np
import pytest

from oneflow_lite import _C
from oneflow_lite.graph_builder import GraphBuilder

LR = 0.1


def mlp(dtype, shared_product=False):
    """mean(relu(x w1 + b1) w2^T + b2); with `shared_product`, x w1 also feeds
    the loss, so that matmul must stay a tensor of its own."""
    rng = np.random.default_rng(7)
    w = {"w1": rng.standard_normal((6, 5)), "b1": rng.standard_normal(5),
         "w2": rng.standard_normal((3, 5)), "b2": rng.standard_normal(3)}
    w = {k: (v * 0.5).astype(dtype) for k, v in w.items()}
    b = GraphBuilder()
    x = b.input("x", [8, 6], dtype=np.dtype(dtype).name)
    h = b.op("matmul", x, b.variable("w1", w["w1"]), name="fc1")
    a = b.op("relu", b.op("bias_add", h, b.variable("b1", w["b1"]), axis=1))
    y = b.op("matmul", a, b.variable("w2", w["w2"]), name="fc2", transpose_b=True)
    y = b.op("bias_add", y, b.variable("b2", w["b2"]), axis=-1)
    loss = b.op("reduce_mean", y)
    if shared_product:
        loss = b.op("add", loss, b.op("reduce_mean", h))
    b.minimize(loss, "sgd", lr=LR)
    return b, w, x, loss


def numpy_step(x, w, shared_product=False):
    """Loss, gradients and SGD-updated variables in float64."""
    w = {k: v.astype(np.float64) for k, v in w.items()}
    x = x.astype(np.float64)
    h = x @ w["w1"]
    a = np.maximum(h + w["b1"], 0)
    y = a @ w["w2"].T + w["b2"]
    loss = y.mean() + (h.mean() if shared_product else 0.0)
    dy = np.full_like(y, 1.0 / y.size)
    grads = {"w2": dy.T @ a, "b2": dy.sum(axis=0)}
    dpre = (dy @ w["w2"]) * (h + w["b1"] > 0)
    grads["b1"] = dpre.sum(axis=0)
    dh = dpre + (np.full_like(h, 1.0 / h.size) if shared_product else 0.0)
    grads["w1"] = x.T @ dh
    return loss, {k: w[k] - LR * grads[k] for k in w}


def traced_ops(path):
    with open(path) as f:
        events = json.load(f)
    events = events["traceEvents"] if isinstance(events, dict) else events
    return [e["name"] for e in events if e.get("ph") == "X"]


@pytest.mark.parametrize("dtype,rtol,atol", [(np.float32, 1e-5, 1e-6),
                                             (np.float64, 1e-12, 1e-12)])
def test_linear_layers_run_as_matmul_bias_and_train_like_numpy(tmp_path, dtype, rtol, atol):
    b, w, x, loss = mlp(dtype)
    trace = str(tmp_path / "trace.json")
    session = _C.Session(b.program, 1, trace_path=trace)
    rng = np.random.default_rng(8)
    for _ in range(3):
        xs = rng.standard_normal((8, 6)).astype(dtype)
        got = session.run({x: xs}, [loss, "w1", "b1", "w2", "b2"])
        want_loss, w = numpy_step(xs, w)
        np.testing.assert_allclose(got[0], want_loss, rtol=rtol, atol=atol)
        for g, k in zip(got[1:], ("w1", "b1", "w2", "b2")):
            np.testing.assert_allclose(g, w[k], rtol=rtol, atol=atol)
        w = dict(zip(("w1", "b1", "w2", "b2"), got[1:]))  # follow the session's values
    names = traced_ops(trace)
    assert sum(n.startswith("matmul_bias ") for n in names) == 2, names
    assert not any(n.startswith("bias_add ") for n in names), names


def test_a_product_read_elsewhere_stays_a_matmul():
    b, w, x, loss = mlp(np.float64, shared_product=True)
    session = b.session(num_threads=1)
    xs = np.random.default_rng(9).standard_normal((8, 6))
    got = session.run({x: xs}, [loss, "w1", "b1", "w2", "b2"])
    want_loss, want = numpy_step(xs, w, shared_product=True)
    np.testing.assert_allclose(got[0], want_loss, rtol=1e-12, atol=1e-12)
    for g, k in zip(got[1:], ("w1", "b1", "w2", "b2")):
        np.testing.assert_allclose(g, want[k], rtol=1e-12, atol=1e-12)
    assert b"matmul_bias" in session.plan_bytes()  # fc2 still fuses
