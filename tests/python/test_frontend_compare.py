"""Tensor comparisons, logical and arg reductions, elementwise math,
selection, joining and indexing (flow.eq ... flow.stack, ``a == b``,
``x[mask]``) against numpy: values with broadcasting and dtypes, gradients
against numpy-written backward rules or finite differences, the errors, and
the same ops traced into an nn.Graph on 4 virtual devices against eager."""
from __future__ import annotations

import operator

import numpy as np
import pytest

import oneflow_lite as flow

nn = flow.nn
F = flow.nn.functional
RTOL, ATOL = 1e-5, 1e-6


def _rng(seed=0):
    return np.random.default_rng(seed)


def _small(rng, shape, dtype):
    return np.asarray(rng.integers(-2, 3, size=shape)).astype(dtype)


# ---- comparisons --------------------------------------------------------------------------

OPERATORS = [operator.eq, operator.ne, operator.lt, operator.le, operator.gt, operator.ge]
SHAPES = [((3, 4), (3, 4)), ((2, 1, 4), (3, 1)), ((4,), ())]


@pytest.mark.parametrize("op", OPERATORS, ids=lambda o: o.__name__)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64])
@pytest.mark.parametrize("shapes", SHAPES, ids=str)
def test_comparison_operators_match_numpy(op, dtype, shapes):
    rng = _rng()
    a, b = _small(rng, shapes[0], dtype), _small(rng, shapes[1], dtype)
    got = op(flow.tensor(a), flow.tensor(b))
    assert got.dtype is flow.bool
    np.testing.assert_array_equal(got.numpy(), op(a, b))
    # numbers on either side, and numpy arrays
    np.testing.assert_array_equal(op(flow.tensor(a), 1).numpy(), op(a, 1))
    np.testing.assert_array_equal(op(1, flow.tensor(a)).numpy(), op(1, a))
    np.testing.assert_array_equal(op(flow.tensor(a), b).numpy(), op(a, b))


def test_mixed_dtypes_compare_in_numpys_common_dtype():
    i = np.array([1, 2, 3], np.int64)
    f = np.array([1.0, 2.5, 3.0], np.float32)
    np.testing.assert_array_equal((flow.tensor(i) == flow.tensor(f)).numpy(), i == f)
    # a fractional number against integers is not truncated
    np.testing.assert_array_equal((flow.tensor(i) < 2.5).numpy(), [True, True, False])
    np.testing.assert_array_equal((flow.tensor(i) == 2.0).numpy(), [False, True, False])
    bools = np.array([True, False, True])
    np.testing.assert_array_equal((flow.tensor(bools) == flow.tensor(i)).numpy(), bools == i)


def test_nan_compares_as_numpy():
    a = np.array([np.nan, 1.0, np.nan], np.float32)
    b = np.array([np.nan, np.nan, 2.0], np.float32)
    for op in OPERATORS:
        np.testing.assert_array_equal(op(flow.tensor(a), flow.tensor(b)).numpy(), op(a, b))


def test_eq_compares_elements_and_tensors_stay_hashable():
    a = flow.randn(3, 4)
    assert (a == a.clone()).all().item() is True
    assert bool((a == a.clone()).all())
    assert (a != a.clone()).any().item() is False
    assert flow.equal(a, a.clone()) and not flow.equal(a, a + 1)
    assert not flow.equal(a, a.reshape(4, 3))
    assert (a == None) is False and (a != None) is True  # noqa: E711 (PyTorch's result)
    table = {a: "a"}
    b = a.clone()
    table[b] = "b"
    assert table[a] == "a" and table[b] == "b" and len({a, b, a}) == 2


def test_bool_tensors_and_logical_operators():
    rng = _rng(1)
    p, q = rng.random(6) < 0.5, rng.random(6) < 0.5
    tp, tq = flow.tensor(p), flow.tensor(q)
    assert tp.dtype is flow.bool and flow.tensor([True, False]).dtype is flow.bool
    np.testing.assert_array_equal((tp & tq).numpy(), p & q)
    np.testing.assert_array_equal((tp | tq).numpy(), p | q)
    np.testing.assert_array_equal((tp ^ tq).numpy(), p ^ q)
    np.testing.assert_array_equal((~tp).numpy(), ~p)
    np.testing.assert_array_equal(tp.float().numpy(), p.astype(np.float32))
    correct = tp == tq  # accuracy as PyTorch users write it
    assert correct.sum().dtype is flow.int64 and correct.sum().item() == int((p == q).sum())
    np.testing.assert_array_equal(flow.tensor(np.eye(3, dtype=bool)).sum(0).numpy(), [1, 1, 1])
    np.testing.assert_array_equal(flow.tensor([0.0, 2.0]).bool().numpy(), [False, True])
    with pytest.raises(TypeError, match="bool tensors"):
        ~flow.tensor([1.0])


# ---- any / all / argmax / max / min -------------------------------------------------------

@pytest.mark.parametrize("dim,keepdim", [(None, False), (0, False), (1, True), ((0, 2), False)])
def test_any_all_match_numpy(dim, keepdim):
    rng = _rng(2)
    x = (rng.random((3, 4, 2)) < 0.3) * rng.integers(1, 3, (3, 4, 2)).astype(np.float32)
    x[0] = 1.0
    t = flow.tensor(x)
    for method, fn in (("any", np.any), ("all", np.all)):
        got = getattr(t, method)(dim, keepdim)
        assert got.dtype is flow.bool
        np.testing.assert_array_equal(got.numpy(), fn(x != 0, axis=dim, keepdims=keepdim))
        np.testing.assert_array_equal(getattr(flow, method)(t, dim, keepdim).numpy(),
                                      got.numpy())


def test_argmax_max_min_match_numpy_and_max_sends_grad_to_the_index():
    rng = _rng(3)
    x = rng.standard_normal((4, 5)).astype(np.float32)
    t = flow.tensor(x, requires_grad=True)
    assert t.argmax().item() == np.argmax(x)
    np.testing.assert_array_equal(t.argmax(1).numpy(), np.argmax(x, 1))
    np.testing.assert_array_equal(flow.argmin(t, 0, keepdim=True).numpy(),
                                  np.argmin(x, 0)[None, :])
    assert t.max().item() == pytest.approx(x.max()) and t.min().item() == pytest.approx(x.min())
    values, indices = t.max(dim=1)
    np.testing.assert_allclose(values.numpy(), x.max(1), rtol=RTOL, atol=ATOL)
    np.testing.assert_array_equal(indices.numpy(), np.argmax(x, 1))
    kept = flow.min(t, 0, keepdim=True)
    assert kept.values.shape == (1, 5) and kept.indices.shape == (1, 5)
    np.testing.assert_allclose(kept.values.numpy(), x.min(0, keepdims=True), rtol=RTOL)
    dy = rng.standard_normal(4).astype(np.float32)
    (values * flow.tensor(dy)).sum().backward()
    want = np.zeros_like(x)
    want[np.arange(4), np.argmax(x, 1)] = dy  # the gradient reaches the largest element only
    np.testing.assert_allclose(t.grad.numpy(), want, rtol=RTOL, atol=ATOL)


def test_elementwise_maximum_minimum_and_ties():
    a = np.array([1.0, 5.0, np.nan, 2.0], np.float32)
    b = np.array([3.0, 2.0, 1.0, np.nan], np.float32)
    np.testing.assert_array_equal(flow.max(flow.tensor(a), flow.tensor(b)).numpy(),
                                  np.maximum(a, b))
    np.testing.assert_array_equal(flow.tensor(a).min(flow.tensor(b)).numpy(), np.minimum(a, b))
    with pytest.raises(ValueError, match="empty"):
        flow.zeros(0).max()


# ---- elementwise math, clamp, std -----------------------------------------------------------

def _fd_grad(fn, x, eps=1e-6):
    """Central finite differences of sum(fn(x)) in float64."""
    g = np.zeros_like(x)
    for i in range(x.size):
        plus, minus = x.copy(), x.copy()
        plus.flat[i] += eps
        minus.flat[i] -= eps
        g.flat[i] = (fn(plus).sum() - fn(minus).sum()) / (2 * eps)
    return g


@pytest.mark.parametrize("name,ref,make", [
    ("abs", np.abs, lambda r: r.uniform(0.2, 2, (3, 4)) * r.choice([-1, 1], (3, 4))),
    ("exp", np.exp, lambda r: r.uniform(-2, 2, (3, 4))),
    ("log", np.log, lambda r: r.uniform(0.2, 3, (3, 4))),
])
def test_unary_math_values_and_gradients(name, ref, make):
    x = make(_rng(4))
    t = flow.tensor(x, dtype=flow.float64, requires_grad=True)
    for out in (getattr(t, name)(), getattr(flow, name)(t)):
        np.testing.assert_allclose(out.numpy(), ref(x), rtol=1e-12, atol=1e-14)
    getattr(flow, name)(t).sum().backward()
    np.testing.assert_allclose(t.grad.numpy(), _fd_grad(ref, x), rtol=1e-6, atol=1e-8)
    np.testing.assert_array_equal(abs(flow.tensor([-3, 2])).numpy(), [3, 2])


def test_pow_with_number_and_tensor_exponents():
    rng = _rng(5)
    x, e = rng.uniform(0.5, 2, (2, 3)), rng.uniform(-2, 2, (3,))
    t = flow.tensor(x, dtype=flow.float64, requires_grad=True)
    te = flow.tensor(e, dtype=flow.float64, requires_grad=True)
    np.testing.assert_allclose(t.pow(3).numpy(), x ** 3, rtol=1e-12)
    np.testing.assert_allclose(flow.pow(t, -0.5).numpy(), x ** -0.5, rtol=1e-12)
    np.testing.assert_allclose((2 ** t).numpy(), 2.0 ** x, rtol=1e-12)
    np.testing.assert_allclose((-2.0 ** flow.tensor([2.0, 3.0])).numpy(), [-4.0, -8.0])
    np.testing.assert_allclose(flow.pow(-2.0, flow.tensor([2.0, 3.0])).numpy(), [4.0, -8.0])
    out = t ** te
    np.testing.assert_allclose(out.numpy(), x ** e, rtol=1e-12)
    out.sum().backward()
    np.testing.assert_allclose(t.grad.numpy(), e * x ** (e - 1), rtol=1e-10)
    np.testing.assert_allclose(te.grad.numpy(), (x ** e * np.log(x)).sum(0), rtol=1e-10)


def test_clamp_values_and_gradient_where_kept():
    x = np.array([[-2.0, -0.5, 0.0], [0.5, 1.0, 3.0]])
    t = flow.tensor(x, dtype=flow.float64, requires_grad=True)
    out = t.clamp(min=-0.5, max=1.0)
    np.testing.assert_array_equal(out.numpy(), np.clip(x, -0.5, 1.0))
    out.sum().backward()
    np.testing.assert_array_equal(t.grad.numpy(), ((x >= -0.5) & (x <= 1.0)).astype(float))
    np.testing.assert_array_equal(flow.clamp(t, min=0.0).numpy(), np.maximum(x, 0.0))
    np.testing.assert_array_equal(t.clip(max=0.0).numpy(), np.minimum(x, 0.0))
    with pytest.raises(ValueError, match="at least one of min and max"):
        t.clamp()


@pytest.mark.parametrize("dim,unbiased,keepdim", [(None, True, False), (1, False, True),
                                                  (0, True, False)])
def test_std_and_var_match_numpy_with_gradient(dim, unbiased, keepdim):
    x = _rng(6).standard_normal((4, 3))
    t = flow.tensor(x, dtype=flow.float64, requires_grad=True)
    ddof = 1 if unbiased else 0
    got = t.std(dim, unbiased, keepdim)
    np.testing.assert_allclose(got.numpy(), np.std(x, axis=dim, ddof=ddof, keepdims=keepdim),
                               rtol=1e-12)
    np.testing.assert_allclose(flow.var(t, dim, unbiased).numpy(),
                               np.var(x, axis=dim, ddof=ddof), rtol=1e-12)
    got.sum().backward()
    want = _fd_grad(lambda v: np.std(v, axis=dim, ddof=ddof, keepdims=keepdim), x)
    np.testing.assert_allclose(t.grad.numpy(), want, rtol=1e-6, atol=1e-8)


# ---- where / masked_fill / gather -----------------------------------------------------------

def test_where_and_masked_fill_broadcast_and_route_gradients():
    rng = _rng(7)
    cond = rng.random((3, 1)) < 0.5
    a = rng.standard_normal((2, 1, 4))
    b = rng.standard_normal((4,))
    ta = flow.tensor(a, dtype=flow.float64, requires_grad=True)
    tb = flow.tensor(b, dtype=flow.float64, requires_grad=True)
    out = flow.where(flow.tensor(cond), ta, tb)
    np.testing.assert_array_equal(out.numpy(), np.where(cond, a, b))
    dy = rng.standard_normal(out.shape)
    out.backward(flow.tensor(dy))
    np.testing.assert_allclose(ta.grad.numpy(), np.where(cond, dy, 0).sum(axis=1, keepdims=True),
                               rtol=1e-12)
    np.testing.assert_allclose(tb.grad.numpy(), np.where(cond, 0, dy).sum(axis=(0, 1)),
                               rtol=1e-12)
    x = rng.standard_normal((3, 4)).astype(np.float32)
    mask = x > 0
    np.testing.assert_array_equal(flow.tensor(x).masked_fill(flow.tensor(mask), -1.5).numpy(),
                                  np.where(mask, np.float32(-1.5), x))
    np.testing.assert_array_equal(flow.where(flow.tensor(mask), 1.0, 0.0).numpy(),
                                  mask.astype(np.float32))
    np.testing.assert_array_equal(flow.tensor(x).where(flow.tensor(mask), 0.0).numpy(),
                                  np.where(mask, x, 0))
    with pytest.raises(TypeError, match="condition must be a bool"):
        flow.where(flow.tensor(x), flow.tensor(x), 0.0)


def test_gather_matches_take_along_axis_and_bad_index_is_named():
    rng = _rng(8)
    x = rng.standard_normal((3, 4)).astype(np.float32)
    index = rng.integers(0, 4, (3, 6))
    got = flow.gather(flow.tensor(x), 1, flow.tensor(index))
    np.testing.assert_array_equal(got.numpy(), np.take_along_axis(x, index, 1))
    with pytest.raises(ValueError, match=r"gather: index\[0, 1\]=7 is out of range \[0, 4\)"):
        flow.tensor(x).gather(1, flow.tensor([[0, 7], [0, 0], [0, 0]]))


# ---- cat / stack ----------------------------------------------------------------------------

def test_cat_and_stack_match_numpy_with_gradients():
    rng = _rng(9)
    a, b = rng.standard_normal((2, 3)), rng.standard_normal((2, 5))
    ta = flow.tensor(a, dtype=flow.float64, requires_grad=True)
    tb = flow.tensor(b, dtype=flow.float64, requires_grad=True)
    out = flow.cat([ta, tb], dim=-1)
    np.testing.assert_array_equal(out.numpy(), np.concatenate([a, b], -1))
    dy = rng.standard_normal(out.shape)
    out.backward(flow.tensor(dy))
    np.testing.assert_array_equal(ta.grad.numpy(), dy[:, :3])
    np.testing.assert_array_equal(tb.grad.numpy(), dy[:, 3:])
    c = rng.standard_normal((2, 3))
    for dim in (0, 1, 2, -1):
        np.testing.assert_array_equal(flow.stack([flow.tensor(a), flow.tensor(c)], dim).numpy(),
                                      np.stack([a, c], dim))
    with pytest.raises(ValueError, match=r"stack: tensors\[1\].shape=\(2, 5\)"):
        flow.stack([flow.tensor(a), flow.tensor(b)])
    with pytest.raises(IndexError, match="cat: dim 2 is out of range"):
        flow.cat([flow.tensor(a)], dim=2)


# ---- indexing by a tensor --------------------------------------------------------------------

def test_indexing_by_index_tensor_list_and_mask():
    rng = _rng(10)
    x = rng.standard_normal((5, 3))
    t = flow.tensor(x, dtype=flow.float64, requires_grad=True)
    idx = np.array([[4, 0], [-1, 4]])
    np.testing.assert_array_equal(t[flow.tensor(idx)].numpy(), x[idx])
    np.testing.assert_array_equal(t[[1, 1, 3]].numpy(), x[[1, 1, 3]])
    mask = x[:, 0] > 0
    np.testing.assert_array_equal(t[flow.tensor(mask)].numpy(), x[mask])
    full_mask = x > 0
    np.testing.assert_array_equal(t[flow.tensor(full_mask)].numpy(), x[full_mask])
    out = t[flow.tensor(idx)]
    dy = rng.standard_normal(out.shape)
    out.backward(flow.tensor(dy))
    want = np.zeros_like(x)
    np.add.at(want, idx, dy)  # repeated rows add up
    np.testing.assert_allclose(t.grad.numpy(), want, rtol=1e-12, atol=1e-14)
    with pytest.raises(IndexError, match="index 5 .* out of bounds for axis 0 of size 5"):
        t[flow.tensor([0, 5])]
    with pytest.raises(IndexError, match="mask's shape"):
        t[flow.tensor(np.array([True, False]))]


# ---- under nn.Graph --------------------------------------------------------------------------

class Probe(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(6, 4)

    def forward(self, x, y):
        logits = self.fc(x)
        pred = logits.argmax(1)
        correct = pred == y
        values, _ = logits.max(1)
        kept = flow.where(logits > 0, logits, logits * 0.1).clamp(-0.5, 0.8)
        picked = logits.gather(1, y.reshape(-1, 1))
        joined = flow.cat([kept.abs().exp(), flow.stack([values, values], 1)], 1)
        masked = joined.masked_fill(joined > 1.5, 0.0)
        loss = masked.mean() + picked.mean() + logits.std() + values.min() * 0.1
        accuracy = correct.float().mean()
        return (loss, accuracy, correct, pred, correct.any(), (logits >= 0).all(0),
                correct.sum())


class ProbeGraph(nn.Graph):
    def __init__(self, model, optimizer=None):
        super().__init__()
        self.model = model
        if optimizer is not None:
            self.add_optimizer(optimizer)

    def build(self, x, y):
        return self.model(x, y)


def test_the_ops_run_under_nn_graph_on_four_devices_as_eager():
    rng = _rng(11)
    data = [(rng.standard_normal((8, 6)).astype(np.float32), rng.integers(0, 4, 8))
            for _ in range(3)]
    flow.manual_seed(0)
    eager = Probe()
    opt = flow.optim.SGD(eager.named_parameters(), lr=0.1)
    want = []
    for x, y in data:
        outs = eager(flow.tensor(x), flow.tensor(y))
        want.append([o.numpy().copy() for o in outs])
        opt.zero_grad()
        outs[0].backward()
        opt.step()
    flow.manual_seed(0)
    model = Probe()
    graph = ProbeGraph(model, flow.optim.SGD(model.named_parameters(), lr=0.1))
    graph.config.auto_parallel(cluster="h100_8gpu", searcher="autoddl",
                               placement=flow.placement("cpu", [[0, 1], [2, 3]]))
    for (x, y), expected in zip(data, want):
        got = graph(x, y)
        assert len(got) == len(expected)
        for g, e in zip(got[:2], expected[:2]):  # loss, accuracy
            np.testing.assert_allclose(g.numpy(), e, rtol=1e-4, atol=1e-5)
        for g, e in zip(got[2:], expected[2:]):
            assert g.numpy().dtype == e.dtype
            np.testing.assert_array_equal(g.numpy(), e)
