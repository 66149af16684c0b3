"""flow.Tensor in eager mode: creation, dtypes, operators and indexing
against numpy, autograd against central finite differences (float64),
no_grad, the meta device, and the errors of bad input."""
from __future__ import annotations

import numpy as np
import pytest

import oneflow_lite as flow
from fd_check import fd_grads


def check_grad(fn, *shapes, seed=0, positive=False):
    """fn maps flow tensors to a scalar flow tensor; checks autograd."""
    rng = np.random.default_rng(seed)
    arrays = [rng.standard_normal(s) for s in shapes]
    if positive:
        arrays = [np.abs(a) + 0.5 for a in arrays]
    tensors = [flow.tensor(a, requires_grad=True) for a in arrays]
    out = fn(*tensors)
    out.backward()
    want = fd_grads(lambda *xs: fn(*[flow.tensor(x) for x in xs]).item(), arrays)
    for t, w in zip(tensors, want):
        np.testing.assert_allclose(t.grad.numpy(), w, rtol=1e-6, atol=1e-8)


def test_creation_and_dtypes():
    assert flow.tensor([1.5, 2.0]).dtype is flow.float32
    assert flow.tensor([1, 2]).dtype is flow.int64
    assert flow.tensor(np.zeros(3, np.float64)).dtype is flow.float64
    assert flow.tensor([1, 2], dtype=flow.float64).numpy().dtype == np.float64
    np.testing.assert_array_equal(flow.zeros(2, 3).numpy(), np.zeros((2, 3), np.float32))
    np.testing.assert_array_equal(flow.ones((2,), dtype=flow.int32).numpy(), [1, 1])
    np.testing.assert_array_equal(flow.arange(5).numpy(), [0, 1, 2, 3, 4])
    np.testing.assert_array_equal(flow.arange(1, 2, 0.5).numpy(), [1.0, 1.5])
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    t = flow.from_numpy(a)
    a[0, 0] = 7
    assert t.numpy()[0, 0] == 7  # shares memory
    assert t.shape == (2, 3) and t.ndim == 2 and t.numel() == 6 and len(t) == 2
    assert "tensor(" in repr(t)


def test_manual_seed_makes_randn_deterministic():
    flow.manual_seed(5)
    a = flow.randn(3, 4).numpy()
    flow.manual_seed(5)
    b = flow.randn(3, 4).numpy()
    flow.manual_seed(6)
    c = flow.randn(3, 4).numpy()
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    # Documented source: numpy's Generator over Philox seeded with the seed.
    want = np.random.Generator(np.random.Philox(5)).standard_normal((3, 4)).astype(np.float32)
    np.testing.assert_array_equal(a, want)


def test_operators_match_numpy():
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    x, y = flow.tensor(a), flow.tensor(b)
    cases = {
        "add": (x + y, a + b), "sub": (x - y, a - b), "mul": (x * y, a * b),
        "div": (x / y, a / b), "neg": (-x, -a), "radd": (2 + x, 2 + a), "rsub": (2 - x, 2 - a),
        "rmul": (3 * x, 3 * a), "sdiv": (x / 4, a / 4), "rdiv": (2 / y, 2 / b),
        "pow": (x ** 2, a ** 2), "matmul": (x @ y.T, a @ b.T), "sum": (x.sum(), a.sum()),
        "sum_axis": (x.sum(1), a.sum(1)),
        "mean": (x.mean(0, keepdim=True), a.mean(0, keepdims=True)),
        "reshape": (x.reshape(-1, 2), a.reshape(-1, 2)), "permute": (x.permute(1, 0), a.T),
        "transpose": (x.transpose(0, 1), a.T), "flatten": (x.flatten(), a.reshape(-1)),
        "index_int": (x[1], a[1]), "index_slice": (x[:, 1:3], a[:, 1:3]),
        "index_step": (x[::2, -1], a[::2, -1]), "ellipsis": (x[..., 0], a[..., 0]),
        "broadcast_add": (x + flow.tensor(b[0]), a + b[0]),
    }
    for name, (got, want) in cases.items():
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-12, atol=1e-12, err_msg=name)
    bx = rng.standard_normal((2, 3, 4))
    by = rng.standard_normal((2, 4, 5))
    np.testing.assert_allclose((flow.tensor(bx) @ flow.tensor(by)).numpy(), bx @ by, rtol=1e-12)


@pytest.mark.parametrize("name,fn,shapes", [
    ("arith", lambda a, b: ((a * b + a / (b * b + 1.0) - 3.0 * a) ** 2).sum(), [(3, 4), (3, 4)]),
    ("broadcast", lambda a, b: (a + b).mean() + (a * b).sum(), [(3, 4), (4,)]),
    ("matmul", lambda a, b: (a @ b).tanh().sum(), [(3, 4), (4, 2)]),
    ("index_reshape", lambda a: (a[1:, ::2].reshape(-1) ** 3).sum() + a[0, 1], [(3, 4)]),
    ("reused", lambda a: (a * a * a).sum() + a.sum(), [(2, 3)]),
    ("softmax", lambda a: (a.softmax(-1) * a).sum(), [(2, 5)]),
])
def test_autograd_matches_finite_differences(name, fn, shapes):
    check_grad(fn, *shapes)


def test_rdiv_gradient_on_positive_inputs():
    check_grad(lambda a: (2.0 / a).sum(), (3,), positive=True)


def test_grad_accumulates_and_no_grad_records_nothing():
    x = flow.tensor([1.0, 2.0, 3.0], requires_grad=True)
    (x * 2).sum().backward()
    (x * x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 + 2 * np.array([1.0, 2.0, 3.0]))
    with flow.no_grad():
        y = x * 2
    assert not y.requires_grad and y.grad_fn is None
    z = (x * 2).detach()
    assert not z.requires_grad
    with pytest.raises(RuntimeError, match="does not require grad"):
        y.sum().backward()


def test_backward_twice_needs_retain_graph():
    x = flow.tensor([1.0, 2.0], requires_grad=True)
    loss = (x * x).sum()
    loss.backward(retain_graph=True)
    loss.backward()
    np.testing.assert_allclose(x.grad.numpy(), [4.0, 8.0])
    with pytest.raises(RuntimeError, match="retain_graph"):
        loss.backward()


def test_backward_of_non_scalar_needs_grad():
    x = flow.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3
    with pytest.raises(RuntimeError, match="scalar"):
        y.backward()
    y.backward(flow.tensor([1.0, 10.0]))
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 30.0])


def test_meta_tensors_have_shape_only_and_refuse_eager_ops():
    with flow.device("meta"):
        t = flow.randn(1000, 1000, 1000)
        b = flow.zeros(4, dtype=flow.bfloat16)
    assert t.is_meta and t.shape == (1000, 1000, 1000) and b.dtype is flow.bfloat16
    with pytest.raises(RuntimeError, match="meta"):
        t + t
    with pytest.raises(RuntimeError, match="no value"):
        t.numpy()
    with pytest.raises(TypeError, match="bfloat16 is for planning only"):
        flow.zeros(2, dtype=flow.bfloat16)


def test_bad_input_errors_name_the_culprit():
    with pytest.raises(ValueError, match=r"matmul: a.shape\[1\]=4 != b.shape\[0\]=3"):
        flow.ones(3, 4) @ flow.ones(3, 4)
    with pytest.raises(ValueError, match="cannot reshape 12 elements"):
        flow.ones(3, 4).reshape(5, -1)
    with pytest.raises(IndexError, match="out of bounds for axis 0 of size 3"):
        flow.ones(3, 4)[3]
    with pytest.raises(TypeError, match="unsupported dtype"):
        flow.tensor(np.zeros(2, np.complex64))
    with pytest.raises(ValueError, match="only floating"):
        flow.tensor([1, 2]).requires_grad_()
    with pytest.raises(ValueError, match="manual_seed"):
        flow.manual_seed(-1)
    with pytest.raises(ValueError, match="unknown device 'gpu'"):
        flow.device("gpu")
    with pytest.raises(AttributeError, match="no op 'nope'"):
        flow.ops.nope
    with pytest.raises(TypeError, match="use flow.tensor"):
        flow.Tensor([1, 2])


def test_generated_op_wrappers_cover_the_registry():
    ops = set(flow._C.list_ops())
    assert {"matmul", "layer_norm", "concat"} <= set(dir(flow.ops))
    a, b = flow.tensor([[1.0, 2.0]]), flow.tensor([[3.0, 4.0]])
    np.testing.assert_array_equal(flow.ops.concat([a, b], axis=0).numpy(), [[1, 2], [3, 4]])
    np.testing.assert_array_equal(flow.nn.functional.concat([a, b], axis=1).numpy(), [[1, 2, 3, 4]])
    assert flow.ops.matmul.__doc__ == flow._C.op_schema("matmul")["doc"]
    assert "sgd_update" in ops
