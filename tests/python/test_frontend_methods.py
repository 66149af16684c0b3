"""The Tensor methods and top-level functions composed from registered ops
(``_tensor_methods``, ``_toplevel``): a table of (method, numpy reference)
rows, each checked forward against numpy and, where it has a gradient,
against central finite differences (float64); the in-place ops and their
autograd rules; the creation functions and grad-mode switches."""
from __future__ import annotations

import re
import tomllib
from pathlib import Path

import numpy as np
import pytest

import oneflow_lite as flow
from fd_check import check_grads


def _tile(x, reps):
    return np.tile(x, reps)


# (id, input shape, flow function, numpy reference)
ROWS = [
    ("squeeze_all", (2, 1, 3, 1), lambda x: x.squeeze(), lambda x: np.squeeze(x)),
    ("squeeze_dim", (2, 1, 3, 1), lambda x: x.squeeze(1), lambda x: np.squeeze(x, 1)),
    ("squeeze_dim_not_one", (2, 1, 3), lambda x: x.squeeze(0), lambda x: x),
    ("squeeze_tuple", (1, 2, 1), lambda x: x.squeeze((0, -1)), lambda x: x.reshape(2)),
    ("unsqueeze_0", (2, 3), lambda x: x.unsqueeze(0), lambda x: x[None]),
    ("unsqueeze_last", (2, 3), lambda x: x.unsqueeze(-1), lambda x: x[..., None]),
    ("unsqueeze_mid", (2, 3), lambda x: x.unsqueeze(1), lambda x: x[:, None]),
    ("expand", (3, 1), lambda x: x.expand(3, 4), lambda x: np.broadcast_to(x, (3, 4))),
    ("expand_lead", (3, 1), lambda x: x.expand(2, -1, 4),
     lambda x: np.broadcast_to(x, (2, 3, 4))),
    ("expand_as", (1, 4), lambda x: x.expand_as(flow.zeros(3, 4)),
     lambda x: np.broadcast_to(x, (3, 4))),
    ("repeat", (2, 3), lambda x: x.repeat(2, 3), lambda x: _tile(x, (2, 3))),
    ("repeat_lead", (2, 3), lambda x: x.repeat(2, 1, 2), lambda x: _tile(x, (2, 1, 2))),
    ("repeat_ones", (2, 3), lambda x: x.repeat(1, 1), lambda x: x),
    ("t", (2, 3), lambda x: x.t(), lambda x: x.T),
    ("t_1d", (3,), lambda x: x.t(), lambda x: x),
    ("contiguous", (2, 3), lambda x: x.contiguous(), lambda x: x),
    ("flow_sum", (2, 3), lambda x: flow.sum(x), lambda x: np.sum(x)),
    ("flow_sum_dim", (2, 3, 4), lambda x: flow.sum(x, dim=1, keepdim=True),
     lambda x: np.sum(x, 1, keepdims=True)),
    ("flow_sum_dims", (2, 3, 4), lambda x: flow.sum(x, (0, 2)), lambda x: np.sum(x, (0, 2))),
    ("flow_matmul", (3, 4), lambda x: flow.matmul(x, x.t()), lambda x: x @ x.T),
    ("flow_matmul_batched", (2, 3, 4), lambda x: flow.matmul(x, x.permute(0, 2, 1)),
     lambda x: x @ x.transpose(0, 2, 1)),
]

# (id, input shape, flow function returning a tuple, numpy reference returning a list)
SPLIT_ROWS = [
    ("chunk_even", (6, 2), lambda x: x.chunk(3), lambda x: np.split(x, 3)),
    ("chunk_uneven", (5, 2), lambda x: x.chunk(2), lambda x: [x[:3], x[3:]]),
    ("chunk_more_than_n", (2, 3), lambda x: x.chunk(4, dim=0), lambda x: [x[:1], x[1:]]),
    ("chunk_dim", (2, 7), lambda x: x.chunk(3, dim=-1),
     lambda x: [x[:, :3], x[:, 3:6], x[:, 6:]]),
    ("split_size", (5, 2), lambda x: x.split(2), lambda x: [x[:2], x[2:4], x[4:]]),
    ("split_sections", (2, 6), lambda x: x.split([1, 3, 2], dim=1),
     lambda x: [x[:, :1], x[:, 1:4], x[:, 4:]]),
]


def _input(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


def _fd_check(fn, x):
    check_grads(fn, [x])


@pytest.mark.parametrize("row", ROWS, ids=[r[0] for r in ROWS])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_method_matches_numpy(row, dtype):
    _, shape, fn, ref = row
    x = _input(shape).astype(dtype)
    got = fn(flow.tensor(x)).numpy()
    want = np.asarray(ref(x.copy()))
    assert got.shape == want.shape
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("row", ROWS, ids=[r[0] for r in ROWS])
def test_method_grad_matches_finite_differences(row):
    _, shape, fn, _ = row
    _fd_check(fn, _input(shape))


@pytest.mark.parametrize("row", SPLIT_ROWS, ids=[r[0] for r in SPLIT_ROWS])
def test_split_methods_match_numpy_and_finite_differences(row):
    _, shape, fn, ref = row
    x = _input(shape)
    got = fn(flow.tensor(x))
    want = ref(x.copy())
    assert isinstance(got, tuple) and len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g.numpy(), w)
    for k in range(len(want)):  # the gradient of each piece lands in its rows only
        _fd_check(lambda t, k=k: fn(t)[k], x)


def test_split_pieces_share_one_backward():
    x = flow.tensor(_input((4, 3)), requires_grad=True)
    a, b = x.chunk(2)
    (a * 2 + b * 3).sum().backward()
    want = np.concatenate([np.full((2, 3), 2.0), np.full((2, 3), 3.0)])
    np.testing.assert_array_equal(x.grad.numpy(), want)


@pytest.mark.parametrize("call, message", [
    (lambda x: x.squeeze(3), "squeeze: dim 3 is out of range for a tensor of 3 dims"),
    (lambda x: x.unsqueeze(5), "unsqueeze: dim 5 is out of range"),
    (lambda x: x.expand(4, 4), "expand: 2 sizes [4, 4] for a tensor of 3 dims"),
    (lambda x: x.expand(3, 5, 3), "expand: cannot expand shape [2, 1, 3] to [3, 5, 3]"),
    (lambda x: x.expand(2, 1, 4), "axis 2: 3 -> 4"),
    (lambda x: x.repeat(2, 2), "repeat: 2 repeats [2, 2] for a tensor of 3 dims"),
    (lambda x: x.repeat(1, -1, 1), "repeat: repeats [1, -1, 1] must not be negative"),
    (lambda x: x.chunk(0), "chunk: chunks must be a positive int, got 0"),
    (lambda x: x.split(0), "split: split_size must be positive, got 0"),
    (lambda x: x.split([1, 1], dim=2), "split: sections [1, 1] do not sum to 3"),
    (lambda x: x.t(), "t: expects a tensor of at most 2 dims, got shape [2, 1, 3]"),
])
def test_shape_method_errors_name_the_method_and_value(call, message):
    x = flow.randn(2, 1, 3)
    with pytest.raises((ValueError, IndexError), match=re.escape(message)):
        call(x)


def test_new_tensors_take_dtype_and_shape():
    x = flow.tensor(np.zeros((2,), np.float64))
    z = x.new_zeros(2, 3)
    assert z.dtype is flow.float64 and z.shape == (2, 3) and not z.numpy().any()
    o = x.new_ones((4,), dtype=flow.int64)
    assert o.dtype is flow.int64 and o.numpy().tolist() == [1, 1, 1, 1]
    f = x.new_full([2], 2.5, requires_grad=True)
    assert f.requires_grad and f.numpy().tolist() == [2.5, 2.5]


# ---- in place ------------------------------------------------------------------------
def test_add_fill_zero_copy_write_the_buffer():
    a = np.arange(6.0).reshape(2, 3)
    x = flow.tensor(a)
    shared = x.numpy()
    x.add_(flow.tensor(np.array([1.0, 2.0, 3.0])), alpha=2)
    np.testing.assert_array_equal(shared, a + 2 * np.array([1.0, 2.0, 3.0]))
    x.add_(0.5)
    np.testing.assert_array_equal(shared, a + 2 * np.array([1.0, 2.0, 3.0]) + 0.5)
    x.fill_(7)
    np.testing.assert_array_equal(shared, np.full((2, 3), 7.0))
    x.copy_(flow.tensor(np.array([[1], [2]], np.int64)))  # broadcast and cast
    np.testing.assert_array_equal(shared, [[1.0] * 3, [2.0] * 3])
    assert x.zero_() is x and not shared.any()
    view = x.detach()
    view.fill_(3)
    np.testing.assert_array_equal(x.numpy(), np.full((2, 3), 3.0))


def test_in_place_on_a_leaf_that_requires_grad_raises_and_changes_nothing():
    w = flow.tensor([1.0, 2.0], requires_grad=True)
    for call in (lambda: w.add_(1), lambda: w.zero_(), lambda: w.fill_(2),
                 lambda: w.copy_(flow.zeros(2))):
        with pytest.raises(RuntimeError, match="a leaf tensor that requires grad"):
            call()
    assert w.numpy().tolist() == [1.0, 2.0]
    with flow.no_grad():
        w.add_(flow.tensor([0.5, 0.5]))
    assert w.numpy().tolist() == [1.5, 2.5] and w.is_leaf and w.requires_grad


def test_add_on_a_non_leaf_is_recorded():
    x = flow.tensor(np.array([1.0, -2.0]), requires_grad=True)
    c = flow.tensor(np.array([3.0, 4.0]), requires_grad=True)
    y = x * x
    saved = y.numpy()
    y.add_(c, alpha=3)  # y = x^2 + 3c
    (y * y).sum().backward()
    v = np.array([1.0, 4.0]) + 3 * np.array([3.0, 4.0])
    np.testing.assert_allclose(x.grad.numpy(), 2 * v * 2 * np.array([1.0, -2.0]))
    np.testing.assert_allclose(c.grad.numpy(), 2 * v * 3)
    np.testing.assert_array_equal(saved, [1.0, 4.0])  # the recorded x*x kept its value


def test_copy_is_differentiable_in_src():
    src = flow.tensor(np.array([[1.0, 2.0]]), requires_grad=True)
    dst = flow.zeros(3, 2, dtype=flow.float64)
    dst.copy_(src)
    assert not dst.is_leaf
    (dst * flow.tensor(np.arange(6.0).reshape(3, 2))).sum().backward()
    np.testing.assert_array_equal(src.grad.numpy(), [[0 + 2 + 4, 1 + 3 + 5]])


def test_in_place_errors():
    x = flow.zeros(2, 3)
    with pytest.raises(ValueError, match=re.escape("add_: other of shape [4] does not "
                                                   "broadcast to self's shape [2, 3]")):
        x.add_(flow.zeros(4))
    with pytest.raises(TypeError, match="add_: other has dtype float64, self float32"):
        x.add_(flow.zeros(3, dtype=flow.float64))
    with pytest.raises(ValueError, match=re.escape("copy_: src of shape [2, 3, 1]")):
        x.copy_(flow.zeros(2, 3, 1))
    assert not x.numpy().any()


# ---- top level ----------------------------------------------------------------------
def test_allclose_as_numpy():
    a = flow.tensor([1.0, 2.0, 3.0])
    assert flow.allclose(a, a.clone())
    assert flow.allclose(a, a + 1e-6)
    assert not flow.allclose(a, a + 1e-3)
    assert flow.allclose(a, a + 1e-3, atol=1e-2)
    assert flow.allclose(flow.tensor([100.0]), flow.tensor([100.05]), rtol=1e-3)
    nan = flow.tensor([float("nan")])
    assert not flow.allclose(nan, nan) and flow.allclose(nan, nan, equal_nan=True)
    with pytest.raises(ValueError, match=re.escape("shapes [3] and [2] do not broadcast")):
        flow.allclose(a, flow.zeros(2))


def test_is_tensor():
    assert flow.is_tensor(flow.zeros(1)) and flow.is_tensor(flow.nn.Parameter(flow.zeros(1)))
    assert not flow.is_tensor(np.zeros(1)) and not flow.is_tensor(1.0)


def test_randperm_eye_linspace():
    flow.manual_seed(3)
    p = flow.randperm(10)
    assert p.dtype is flow.int64 and sorted(p.numpy().tolist()) == list(range(10))
    flow.manual_seed(3)
    assert flow.randperm(10).numpy().tolist() == p.numpy().tolist()
    np.testing.assert_array_equal(flow.eye(3).numpy(), [[1, 0, 0], [0, 1, 0], [0, 0, 1]])
    e = flow.eye(2, 3, dtype=flow.float64)
    assert e.dtype is flow.float64 and e.numpy().tolist() == [[1, 0, 0], [0, 1, 0]]
    np.testing.assert_allclose(flow.linspace(-1, 1, 5).numpy(), [-1, -0.5, 0, 0.5, 1])
    assert flow.linspace(0, 1, 1).numpy().tolist() == [0.0]
    with pytest.raises(ValueError, match="randperm: n must be a non-negative int, got -1"):
        flow.randperm(-1)
    with pytest.raises(ValueError, match="linspace: steps must be a non-negative int"):
        flow.linspace(0, 1, -2)


def test_set_grad_enabled_and_inference_mode():
    x = flow.tensor([1.0], requires_grad=True)
    with flow.set_grad_enabled(False):
        assert not (x * 2).requires_grad
    assert flow.is_grad_enabled()
    flow.set_grad_enabled(False)
    try:
        assert not flow.is_grad_enabled() and not (x * 2).requires_grad
    finally:
        flow.set_grad_enabled(True)
    assert (x * 2).requires_grad
    with flow.inference_mode():
        assert not (x * 2).requires_grad
    with flow.inference_mode(False):
        assert (x * 2).requires_grad

    @flow.inference_mode()
    def infer(t):
        return t * 2

    assert not infer(x).requires_grad and flow.is_grad_enabled()

    @flow.set_grad_enabled(False)
    def frozen(t):
        return t * 2

    assert flow.is_grad_enabled()  # as a decorator it changes the mode only inside
    assert not frozen(x).requires_grad and flow.is_grad_enabled()


def test_version_matches_pyproject():
    root = Path(__file__).resolve().parents[2]
    project = tomllib.loads((root / "pyproject.toml").read_text())["project"]
    assert flow.__version__ == project["version"]


def test_every_composed_method_is_in_a_table_or_tested_in_place():
    from oneflow_lite import _tensor_methods

    row_ids = [r[0] for r in ROWS + SPLIT_ROWS]
    in_place_tests = {"new_full", "new_zeros", "new_ones", "add_", "fill_", "zero_", "copy_"}
    for fn in _tensor_methods.METHODS:
        name = fn.__name__
        assert name in in_place_tests or any(i == name or i.startswith(name + "_")
                                             for i in row_ids), f"{name} has no row"
        assert getattr(flow.Tensor, name) is fn


# ---- under nn.Graph ---------------------------------------------------------------------
class _Traced(flow.nn.Graph):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def build(self, x):
        return self.fn(x)


def _composed(x):
    y = x * 2
    y.add_(x.t().t(), alpha=0.5)  # 2.5 x
    z = (x * 1).fill_(3.0)
    w = (x * 1).copy_(x.sum(0, keepdim=True))
    a, b = x.unsqueeze(0).expand(2, -1, -1).repeat(1, 1, 2).chunk(2, dim=-1)
    return y + z + w + a.squeeze(0)[0] + b.split(1, dim=0)[1].squeeze()


def test_composed_methods_and_in_place_ops_trace_into_a_graph():
    x = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    want = 2.5 * x + 3.0 + x.sum(0, keepdims=True) + x + x
    np.testing.assert_allclose(_composed(flow.tensor(x)).numpy(), want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(_Traced(_composed)(flow.tensor(x)).numpy(), want, rtol=1e-5,
                               atol=1e-5)


def test_in_place_into_an_eager_tensor_inside_a_graph_raises():
    const = flow.zeros(3, 4)
    with pytest.raises(NotImplementedError, match="add_: writing a graph value into an eager "
                                                  "tensor"):
        _Traced(lambda x: const.add_(x))(flow.randn(3, 4))
    assert not const.numpy().any()
