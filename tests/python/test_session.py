"""``_C.Session``: a single-device graph run as a one-rank plan on the actor
runtime (one execution path for graphs).

A training step of a small MLP fetches what callers fetch (an input, an
intermediate value, the loss, a gradient, and variables, which come back as
they are after the step's update) against a numpy forward, backward and SGD
step; bad feeds, fetches and options raise errors naming the tensor or the
option. The oracle is numpy.
"""
from __future__ import annotations

import numpy as np
import pytest

from oneflow_lite import _C
from oneflow_lite.graph_builder import GraphBuilder

LR = 0.1


def mlp():
    rng = np.random.default_rng(3)
    w1 = rng.standard_normal((6, 5)).astype(np.float32) * 0.5
    w2 = rng.standard_normal((5, 3)).astype(np.float32) * 0.5
    b = GraphBuilder()
    x = b.input("x", [8, 6])
    h = b.op("matmul", x, b.variable("w1", w1))
    a = b.op("relu", h)
    y = b.op("matmul", a, b.variable("w2", w2))
    loss = b.op("reduce_mean", y)
    b.minimize(loss, "sgd", lr=LR)
    return b, w1, w2, x, a, loss


def numpy_step(x, w1, w2):
    """Forward, backward and SGD of mean(relu(x w1) w2) in float64."""
    x, w1, w2 = (v.astype(np.float64) for v in (x, w1, w2))
    a = np.maximum(x @ w1, 0)
    y = a @ w2
    dy = np.full_like(y, 1.0 / y.size)
    dw2 = a.T @ dy
    dw1 = x.T @ ((dy @ w2.T) * (a > 0))
    return a, y.mean(), dw2, w1 - LR * dw1, w2 - LR * dw2


def test_fetches_inputs_intermediates_gradients_and_updated_variables():
    b, w1, w2, x, a, loss = mlp()
    session = b.session(num_threads=1)
    grad_w2 = b.program.gradients()["w2"]
    rng = np.random.default_rng(4)
    for _ in range(3):
        xs = rng.standard_normal((8, 6)).astype(np.float32)
        got = session.run({x: xs}, [x, a, loss, grad_w2, "w1", "w2"])
        want_a, want_loss, want_dw2, w1, w2 = numpy_step(xs, w1, w2)
        np.testing.assert_array_equal(got[0], xs)
        for g, w in zip(got[1:], [want_a, want_loss, want_dw2, w1, w2]):
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
        w1, w2 = got[4], got[5]  # follow the session's float32 weights
    np.testing.assert_array_equal(session.get_variable("w2"), w2)


def test_bad_feeds_fetches_and_options_name_the_culprit():
    b, _, _, x, _, loss = mlp()
    session = b.session(num_threads=1)
    good = np.zeros((8, 6), np.float32)
    with pytest.raises(ValueError, match="run: input 'x' was not fed"):
        session.run({}, [loss])
    with pytest.raises(ValueError, match=r"run: input 'x' expects shape \(8, 6\) float32, got "
                                         r"\(8, 5\) float32"):
        session.run({x: np.zeros((8, 5), np.float32)}, [loss])
    with pytest.raises(ValueError, match="run: 'z' is not an input of the graph"):
        session.run({x: good, "z": good}, [loss])
    with pytest.raises(ValueError, match="run: cannot fetch unknown tensor 'nope'"):
        session.run({x: good}, ["nope"])
    with pytest.raises(ValueError, match="variable 'w1' has shape"):
        session.set_variable("w1", np.zeros((5, 6), np.float32))
    with pytest.raises(ValueError, match="timeout=0 ms"):
        _C.Session(b.program, 1, timeout_ms=0)
    with pytest.raises(ValueError, match="num_threads=-2"):
        _C.Session(b.program, -2)
    (value,) = session.run({x: good}, [loss])  # nothing above changed the session
    assert value == pytest.approx(0.0, abs=1e-7)


def test_session_is_the_one_rank_distributed_session():
    """One session class: Session is a DistributedSession in Python too, with
    its variables, layout and strategy (one rank, every tensor B)."""
    b, w1, _, x, _, loss = mlp()
    session = b.session(num_threads=1)
    assert isinstance(session, _C.DistributedSession)
    assert session.local_ranks() == [0]
    layout = session.variable_layout("w1")
    assert layout["shape"] == [6, 5] and layout["ranks"] == [0]
    np.testing.assert_array_equal(session.get_variable_slice("w1", 0), w1)
    xs = np.ones((8, 6), np.float32)
    one = session.run({x: xs}, [loss])  # Session.run: a list of arrays
    assert isinstance(one, list) and np.shape(one[0]) == ()
