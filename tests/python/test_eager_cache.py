"""The eager executor's cache (oneflow_lite/api/eager.h) is keyed right.

An eager op's inference, allocation check and kernel lookup are kept per
(op type, attributes, input shapes and dtypes), and so are the backward ops
of its gradient. These tests change one part of the key at a time (an
attribute, a float attribute by one ulp, a shape, a dtype, which output
gradients flow) and check every result against numpy; then that a call that
fails (bad shapes: inference; a bad value: the kernel) leaves the cache as
it was and usable; and that mutable inputs (optimizer state) and numpy
views are handled. The op table (test_ops.py) covers each op's numerics.
"""
from __future__ import annotations

import numpy as np
import pytest

import oneflow_lite as flow
from oneflow_lite import _C, _dispatch

RTOL, ATOL = 1e-6, 1e-6


def rand(*shape, dtype=np.float64, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def test_repeated_call_hits_and_gives_the_same_result():
    e = _C.EagerExecutor()
    a, b = rand(3, 4), rand(4, 5, seed=1)
    first = e.run("matmul", [a, b], {})[0]
    second = e.run("matmul", [a + 1, b], {})[0]
    assert e.stats() == {"hits": 1, "misses": 1, "entries": 1}
    np.testing.assert_allclose(first, a @ b, rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(second, (a + 1) @ b, rtol=RTOL, atol=ATOL)


def test_attributes_are_part_of_the_key():
    e = _C.EagerExecutor()
    a = rand(4, 3)
    b = rand(4, 3, seed=1)
    np.testing.assert_allclose(e.run("matmul", [a, b], {"transpose_b": True})[0], a @ b.T,
                               rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(e.run("matmul", [a, b], {"transpose_a": True})[0], a.T @ b,
                               rtol=RTOL, atol=ATOL)
    x = rand(2, 3, 4)
    for axes, keep in [([0], False), ([1], False), ([1], True), ([0, 2], False)]:
        got = e.run("reduce_sum", [x], {"axes": axes, "keepdims": keep})[0]
        np.testing.assert_allclose(got, x.sum(axis=tuple(axes), keepdims=keep), rtol=RTOL,
                                   atol=ATOL, err_msg=f"axes={axes} keepdims={keep}")
    assert e.stats()["misses"] == 6


def test_float_attributes_are_keyed_by_their_bits():
    e = _C.EagerExecutor()
    x = rand(5)
    near = float(np.nextafter(1e-3, 1.0))
    for value in (1e-3, near, 1e-3, 2.0):
        np.testing.assert_array_equal(e.run("scalar_mul", [x], {"value": value})[0], x * value)
    assert e.stats() == {"hits": 1, "misses": 3, "entries": 3}


def test_shapes_and_dtypes_are_part_of_the_key():
    e = _C.EagerExecutor()
    cases = [(rand(2, 3), rand(2, 3, seed=1)), (rand(3, 2), rand(3, 2, seed=1)),
             (rand(2, 3), rand(3, seed=1)), (rand(2, 3, dtype=np.float32),
                                             rand(2, 3, seed=1, dtype=np.float32))]
    for a, b in cases:
        got = e.run("add", [a, b], {})[0]
        assert got.dtype == a.dtype and got.shape == (a + b).shape
        np.testing.assert_allclose(got, a + b, rtol=RTOL, atol=ATOL)
    assert e.stats()["misses"] == len(cases)


def test_gradient_key_covers_attributes_and_flowing_output_grads():
    e = _C.EagerExecutor()
    a, b = rand(4, 3), rand(5, 3, seed=1)
    dy = rand(4, 5, seed=2)
    da, db = e.grad("matmul", [a, b], {"transpose_b": True}, [dy])
    np.testing.assert_allclose(da, dy @ b, rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(db, dy.T @ a, rtol=RTOL, atol=ATOL)
    b2 = rand(3, 5, seed=3)
    da, db = e.grad("matmul", [a, b2], {}, [dy])
    np.testing.assert_allclose(da, dy @ b2.T, rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(db, a.T @ dy, rtol=RTOL, atol=ATOL)
    # No gradient flows into the output: no input gradient, then one again.
    assert e.grad("matmul", [a, b2], {}, [None]) == [None, None]
    da, _ = e.grad("matmul", [a, b2], {}, [2 * dy])
    np.testing.assert_allclose(da, 2 * dy @ b2.T, rtol=RTOL, atol=ATOL)
    assert e.stats() == {"hits": 1, "misses": 3, "entries": 3}


def softmax_grad(y, dy):
    return y * (dy - (dy * y).sum(-1, keepdims=True))


def test_gradient_that_needs_the_forward_output():
    # softmax's backward reads y: without it, the forward op runs inside the gradient.
    e = _C.EagerExecutor()
    x, dy = rand(3, 4), rand(3, 4, seed=1)
    for _ in range(2):
        (dx,) = e.grad("softmax", [x], {"axis": -1}, [dy])
        y = np.exp(x - x.max(-1, keepdims=True))
        y /= y.sum(-1, keepdims=True)
        np.testing.assert_allclose(dx, softmax_grad(y, dy), rtol=1e-9, atol=1e-12)


def test_gradient_takes_the_forward_outputs_it_is_given():
    e = _C.EagerExecutor()
    x, dy = rand(3, 4), rand(3, 4, seed=1)
    (y,) = e.run("softmax", [x], {"axis": -1})
    (dx,) = e.grad("softmax", [x], {"axis": -1}, [dy], [y])
    np.testing.assert_allclose(dx, softmax_grad(y, dy), rtol=1e-9, atol=1e-12)
    # The given y is what the backward reads (the op does not run again) ...
    other = np.full((3, 4), 0.25)
    (dx,) = e.grad("softmax", [x], {"axis": -1}, [dy], [other])
    np.testing.assert_allclose(dx, softmax_grad(other, dy), rtol=1e-9, atol=1e-12)
    # ... unless it does not fit: then the op runs and y is recomputed.
    for bad in ([rand(4, 3)], [y.astype(np.float32)], [y, y]):
        (dx,) = e.grad("softmax", [x], {"axis": -1}, [dy], bad)
        np.testing.assert_allclose(dx, softmax_grad(y, dy), rtol=1e-9, atol=1e-12)


def test_an_inference_error_leaves_the_cache_usable():
    e = _C.EagerExecutor()
    a, b = rand(2, 3), rand(3, 4, seed=1)
    e.run("matmul", [a, b], {})
    before = e.stats()
    for _ in range(2):  # errors are not cached: the same message each time
        with pytest.raises(ValueError, match=r"matmul: a.shape\[1\]=3 != b.shape\[0\]=2"):
            e.run("matmul", [a, a], {})
    with pytest.raises(ValueError, match="matmul: unknown attribute 'transpose_c'"):
        e.run("matmul", [a, b], {"transpose_c": True})
    with pytest.raises(ValueError, match="matmul: input b is missing"):
        e.run("matmul", [a, None], {})
    assert e.stats()["entries"] == before["entries"]
    np.testing.assert_allclose(e.run("matmul", [a, b], {})[0], a @ b, rtol=RTOL, atol=ATOL)
    assert e.stats()["hits"] == before["hits"] + 1


def test_a_kernel_value_error_leaves_the_cache_usable():
    e = _C.EagerExecutor()
    weight = rand(5, 3)
    good, bad = np.array([0, 4, 2]), np.array([0, 7, 2])
    np.testing.assert_array_equal(e.run("embedding", [weight, good], {})[0], weight[good])
    with pytest.raises(ValueError, match="embedding.*7"):
        e.run("embedding", [weight, bad], {})  # same key: a hit whose kernel refuses
    np.testing.assert_array_equal(e.run("embedding", [weight, good[::-1].copy()], {})[0],
                                  weight[good[::-1]])
    assert e.stats() == {"hits": 2, "misses": 1, "entries": 1}


def test_mutable_inputs_are_copied_on_every_call():
    e = _C.EagerExecutor()
    p, g = rand(4), rand(4, seed=1)
    momentum = np.zeros(4)
    attrs = {"lr": 0.1, "momentum": 0.9}
    for _ in range(2):  # the second call hits and must not see the first's writes
        p_new, m_new = e.run("sgd_update", [p, g, momentum], attrs)
        np.testing.assert_allclose(m_new, g, rtol=RTOL, atol=ATOL)
        np.testing.assert_allclose(p_new, p - 0.1 * g, rtol=RTOL, atol=ATOL)
    np.testing.assert_array_equal(momentum, np.zeros(4))  # the caller's, untouched


def test_views_and_read_only_arrays_are_read_correctly():
    e = _C.EagerExecutor()
    x = rand(4, 6)
    frozen = x.copy()
    frozen.flags.writeable = False
    for view in (x.T, x[:, ::2], x[1:3], frozen):
        got = e.run("scalar_mul", [view], {"value": 2.0})[0]
        np.testing.assert_array_equal(got, 2.0 * view)
        got[...] = 0  # results are the caller's own
    np.testing.assert_array_equal(frozen, x)


def test_a_full_cache_starts_over_and_stays_right():
    e = _C.EagerExecutor(capacity=2)
    x = rand(3, 3)
    for k in range(5):
        np.testing.assert_array_equal(e.run("scalar_add", [x], {"value": float(k)})[0], x + k)
        assert e.stats()["entries"] <= 2


def test_frontend_ops_and_backward_go_through_one_executor():
    a = flow.tensor(rand(3, 4), requires_grad=True)
    b = flow.tensor(rand(4, 2, seed=1))
    before = _dispatch.executor.stats()
    for _ in range(3):
        a.grad = None
        flow.ops.reduce_sum(flow.ops.matmul(a, b)).backward()
        np.testing.assert_allclose(a.grad.numpy(), np.ones((3, 2)) @ b.numpy().T, rtol=RTOL,
                                   atol=ATOL)
    after = _dispatch.executor.stats()
    calls = 3 * 4  # two ops forward, two gradients, three times
    assert after["hits"] + after["misses"] - before["hits"] - before["misses"] == calls
    assert after["misses"] - before["misses"] <= 4


def test_run_in_place_writes_the_callers_arrays():
    e = _C.EagerExecutor()
    p, g, momentum = rand(4), rand(4, seed=1), np.zeros(4)
    expected = p - 0.1 * g
    assert e.run_in_place("sgd_update", [p, g, momentum], {"lr": 0.1, "momentum": 0.9}) == []
    np.testing.assert_allclose(p, expected, rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(momentum, g, rtol=RTOL, atol=ATOL)
    strided = rand(4, 2)[:, 0]
    frozen = p.copy()
    frozen.flags.writeable = False
    for bad in (strided, frozen):
        with pytest.raises(ValueError, match="sgd_update: run_in_place: input 0 is not"):
            e.run_in_place("sgd_update", [bad, g, momentum], {"lr": 0.1})
    with pytest.raises(ValueError, match="sgd_update"):  # inference fails: nothing written
        e.run_in_place("sgd_update", [p, rand(5), momentum], {"lr": 0.1})
    np.testing.assert_allclose(p, expected, rtol=RTOL, atol=ATOL)


def test_optimizer_in_place_and_copy_paths_agree():
    def train(anomaly: bool):
        flow.manual_seed(3)
        model = flow.nn.Linear(4, 3)
        opt = flow.optim.AdamW(model.parameters(), lr=0.1, weight_decay=0.01)
        x = flow.tensor(rand(5, 4, dtype=np.float32))
        with flow.autograd.detect_anomaly(anomaly):  # anomaly mode takes the copying path
            for _ in range(3):
                opt.zero_grad()
                flow.ops.reduce_sum(model(x) * model(x)).backward()
                opt.step()
        return [p.numpy().copy() for p in model.parameters()]

    for a, b in zip(train(False), train(True)):
        np.testing.assert_array_equal(a, b)
