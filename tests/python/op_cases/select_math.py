"""Rows for where, gather/gather_grad and the elementwise math exp, log,
abs, sign, pow. Backward references are written in numpy from the calculus
(np.add.at for the scatter of gather's gradient), independent of the ops'
own gradient rules."""
import numpy as np

from op_table import ErrorCase, OpCase

F32 = "float32"
I64 = "int64"


def _unbroadcast(g, shape):
    """Sums g (an output-shaped gradient) down to `shape` by numpy's rules."""
    g = np.asarray(g)
    while g.ndim > len(shape):
        g = g.sum(axis=0)
    for i, d in enumerate(shape):
        if d == 1 and g.shape[i] != 1:
            g = g.sum(axis=i, keepdims=True)
    return g


# ---- where ------------------------------------------------------------------------------

def _where_inputs(cond_shape, a_shape, b_shape, dtype=None):
    def make(rng, dt):
        d = dtype or dt
        return [rng.random(cond_shape) < 0.5,
                np.asarray(rng.standard_normal(a_shape) * 4).astype(d),
                np.asarray(rng.standard_normal(b_shape) * 4).astype(d)]
    return make


def _where_fwd(xs, a):
    return [np.where(xs[0], xs[1], xs[2])]


def _where_bwd(xs, a, dys):
    cond, x, y = xs
    dy = dys[0]
    return [None, _unbroadcast(np.where(cond, dy, 0), x.shape),
            _unbroadcast(np.where(cond, 0, dy), y.shape)]


WHERE = [
    OpCase(id="where", op="where", make_inputs=_where_inputs((3, 4), (3, 4), (3, 4)),
           forward=_where_fwd, backward=_where_bwd,
           cost_inputs=[([2, 3, 1], "bool"), ([3, 4], F32), ([4], F32)],
           flops=2 * 3 * 4,         # one select per output element of (2, 3, 4)
           memory_bytes=2 * 3 * 4 * 4,
           errors=[
               ErrorCase([([3], F32), ([3], F32), ([3], F32)], {},
                         ["where: cond.dtype=float32 is not bool"]),
               ErrorCase([([3], "bool"), ([3], F32), ([3], "float64")], {},
                         ["where: a.dtype=float32 != b.dtype=float64"]),
               ErrorCase([([2, 3], "bool"), ([4], F32), ([1], F32)], {},
                         ["where: cond.shape=(2, 3) and a.shape=(4) cannot be broadcast"]),
               ErrorCase([([3], "bool"), ([3], F32)], {}, ["where", "expects 3 inputs, got 2"]),
           ]),
    # all three broadcast: cond (3, 1), a (2, 1, 4), b () -> (2, 3, 4)
    OpCase(id="where_bcast", op="where", make_inputs=_where_inputs((3, 1), (2, 1, 4), ()),
           forward=_where_fwd, backward=_where_bwd),
    OpCase(id="where_bcast_cond", op="where", make_inputs=_where_inputs((2, 3, 4), (4,), (3, 1)),
           forward=_where_fwd, backward=_where_bwd),
    OpCase(id="where_int64", op="where", make_inputs=_where_inputs((3, 4), (3, 4), (4,), np.int64),
           forward=_where_fwd, no_grad_reason="int64 values"),
]


# ---- gather / gather_grad ---------------------------------------------------------------

def _gather_inputs(x_shape, index_shape, axis, dtype=None, index_dtype=np.int64):
    def make(rng, dt):
        x = rng.standard_normal(x_shape).astype(dtype or dt)
        index = rng.integers(0, x_shape[axis], size=index_shape).astype(index_dtype)
        return [x, index]
    return make


def _gather_fwd(xs, a):
    return [np.take_along_axis(xs[0], xs[1].astype(np.int64), axis=a["axis"])]


def _scatter_add(index, dy, shape, axis):
    """zeros(shape) with dy added at index along axis (repeats add up)."""
    out = np.zeros(shape, dy.dtype)
    grid = list(np.indices(index.shape, sparse=True))
    grid[axis % len(shape)] = index.astype(np.int64)
    np.add.at(out, tuple(grid), dy)
    return out


def _gather_bwd(xs, a, dys):
    return [_scatter_add(xs[1], dys[0], xs[0].shape, a["axis"]), None]


GATHER = [
    OpCase(id="gather", op="gather", make_inputs=_gather_inputs((3, 4), (3, 6), 1),
           attrs={"axis": 1}, forward=_gather_fwd, backward=_gather_bwd,
           cost_inputs=[([3, 4], F32), ([3, 6], I64)], cost_attrs={"axis": 1},
           flops=3 * 6,              # one read per index element
           memory_bytes=3 * 6 * 4,   # out (3, 6) float32
           errors=[
               ErrorCase([([3, 4], F32), ([3, 2], F32)], {"axis": 1},
                         ["gather: index.dtype=float32 is not int32 or int64"]),
               ErrorCase([([3, 4], F32), ([2, 2], I64)], {"axis": 1},
                         ["gather: index.shape[0]=2 != x.shape[0]=3", "only axis 1"]),
               ErrorCase([([3, 4], F32), ([3], I64)], {"axis": 0},
                         ["gather: index.shape=(3) has 1 dims, x.shape=(3, 4) has 2"]),
               ErrorCase([([3, 4], F32), ([3, 4], I64)], {"axis": 2},
                         ["gather: axis=2 is out of range for 2 dims"]),
           ]),
    # repeated rows along axis 0 (their gradients add up), int32 index
    OpCase(id="gather_axis0_repeats", op="gather",
           make_inputs=_gather_inputs((3, 4), (7, 4), 0, index_dtype=np.int32),
           attrs={"axis": 0}, forward=_gather_fwd, backward=_gather_bwd),
    OpCase(id="gather_3d_neg", op="gather", make_inputs=_gather_inputs((2, 5, 3), (2, 2, 3), 1),
           attrs={"axis": -2}, forward=_gather_fwd, backward=_gather_bwd),
    OpCase(id="gather_int64_values", op="gather",
           make_inputs=_gather_inputs((4, 3), (2, 3), 0, dtype=np.int64),
           attrs={"axis": 0}, forward=_gather_fwd, no_grad_reason="int64 values"),
]


def _gather_grad_inputs(shape, index_shape, axis):
    def make(rng, dt):
        index = rng.integers(0, shape[axis], size=index_shape).astype(np.int64)
        return [index, rng.standard_normal(index_shape).astype(dt)]
    return make


def _gather_grad_fwd(xs, a):
    return [_scatter_add(xs[0], xs[1], a["shape"], a["axis"])]


GATHER_GRAD = [
    OpCase(id="gather_grad", op="gather_grad", make_inputs=_gather_grad_inputs((4, 3), (6, 3), 0),
           attrs={"shape": [4, 3], "axis": 0}, forward=_gather_grad_fwd,
           no_grad_reason="a backward op: no second derivatives through gather",
           cost_inputs=[([6, 3], I64), ([6, 3], F32)], cost_attrs={"shape": [4, 3], "axis": 0},
           flops=6 * 3,             # one add per index element
           memory_bytes=4 * 3 * 4,  # dx (4, 3) float32
           errors=[
               ErrorCase([([6, 3], I64), ([6, 2], F32)], {"shape": [4, 3], "axis": 0},
                         ["gather_grad: dy.shape=(6, 2) != index.shape=(6, 3)"]),
               ErrorCase([([6, 3], I64), ([6, 3], F32)], {"shape": [4, 2], "axis": 0},
                         ["gather_grad: index.shape[1]=3 != shape[1]=2"]),
           ]),
    OpCase(id="gather_grad_axis1", op="gather_grad",
           make_inputs=_gather_grad_inputs((2, 5), (2, 3), 1),
           attrs={"shape": [2, 5], "axis": 1}, forward=_gather_grad_fwd,
           no_grad_reason="a backward op"),
]


# ---- exp / log / abs / sign -------------------------------------------------------------

def _away_from_zero(shape):
    """|x| in [0.2, 2] with random signs: abs and sign are smooth there."""
    def make(rng, dt):
        x = rng.uniform(0.2, 2.0, shape) * rng.choice([-1.0, 1.0], shape)
        return [x.astype(dt)]
    return make


def _unary_row(id, op, make, fwd, bwd, **extra):
    return OpCase(id=id, op=op, make_inputs=make, forward=lambda xs, a: [fwd(xs[0])],
                  backward=None if bwd is None else (lambda xs, a, dys: [bwd(xs[0], dys[0])]),
                  **extra)


def _unary_errors(op, integers_too):
    allowed = "float32 or float64, int32 or int64" if integers_too else "float32 or float64"
    bad = "bool" if integers_too else "int64"
    return [ErrorCase([([3], bad)], {}, [f"{op}: x.dtype={bad} is not {allowed}"]),
            ErrorCase([([3], F32), ([3], F32)], {}, [op, "expects 1 inputs, got 2"])]


def _quiet_log(x):
    with np.errstate(divide="ignore", invalid="ignore"):  # -inf and nan are the point
        return np.log(x)


UNARY = [
    _unary_row("exp", "exp", lambda rng, dt: [rng.uniform(-3, 3, (3, 4)).astype(dt)], np.exp,
               lambda x, dy: dy * np.exp(x),
               cost_inputs=[([3, 4], F32)], flops=12, memory_bytes=48,
               errors=_unary_errors("exp", False)),
    _unary_row("log", "log", lambda rng, dt: [rng.uniform(0.2, 4, (3, 4)).astype(dt)], np.log,
               lambda x, dy: dy / x,
               cost_inputs=[([3, 4], "float64")], flops=12, memory_bytes=96,
               errors=_unary_errors("log", False)),
    _unary_row("log_edges", "log",
               lambda rng, dt: [np.array([0.0, -1.0, np.inf, 1.0], dt)], _quiet_log, None,
               no_grad_reason="log(0) and log(-1): values only"),
    _unary_row("abs", "abs", _away_from_zero((3, 4)), np.abs, lambda x, dy: dy * np.sign(x),
               cost_inputs=[([2, 5], F32)], flops=10, memory_bytes=40,
               errors=_unary_errors("abs", True)),
    _unary_row("abs_int64", "abs",
               lambda rng, dt: [rng.integers(-5, 6, (4, 3)).astype(np.int64)], np.abs, None,
               no_grad_reason="int64 values"),
    _unary_row("sign", "sign", _away_from_zero((3, 4)), np.sign,
               lambda x, dy: np.zeros_like(x),
               cost_inputs=[([2, 5], F32)], flops=10, memory_bytes=40,
               errors=_unary_errors("sign", True)),
    _unary_row("sign_zero_int32", "sign",
               lambda rng, dt: [rng.integers(-2, 3, (3, 5)).astype(np.int32)], np.sign, None,
               no_grad_reason="int32 values"),
]


# ---- pow (a tensor exponent) ----------------------------------------------------------

def _pow_inputs(a_shape, b_shape):
    """Positive bases (the gradient of b takes log(a)), exponents in [-2, 2]."""
    def make(rng, dt):
        return [rng.uniform(0.5, 2.0, a_shape).astype(dt),
                rng.uniform(-2.0, 2.0, b_shape).astype(dt)]
    return make


def _pow_fwd(xs, a):
    return [np.power(xs[0], xs[1])]


def _pow_bwd(xs, a, dys):
    x, e = xs
    dy = dys[0]
    return [_unbroadcast(dy * e * np.power(x, e - 1), x.shape),
            _unbroadcast(dy * np.power(x, e) * np.log(x), e.shape)]


def _negative_bases(rng, dt):
    """Negative bases with integer exponents: real results, signs alternate."""
    return [rng.uniform(-2.0, -0.5, (3, 4)).astype(dt),
            rng.integers(-2, 4, (4,)).astype(dt)]


POW = [
    OpCase(id="pow", op="pow", make_inputs=_pow_inputs((3, 4), (3, 4)), forward=_pow_fwd,
           backward=_pow_bwd,
           cost_inputs=[([2, 3, 4], F32), ([3, 1], F32)],
           flops=2 * 3 * 4, memory_bytes=2 * 3 * 4 * 4,
           errors=[
               ErrorCase([([2, 3], F32), ([4], F32)], {},
                         ["pow: a.shape=(2, 3) and b.shape=(4) cannot be broadcast"]),
               ErrorCase([([3], F32), ([3], "float64")], {},
                         ["pow: a.dtype=float32 != b.dtype=float64"]),
               ErrorCase([([3], I64), ([3], I64)], {}, ["pow: dtype int64 is not float32"]),
           ]),
    OpCase(id="pow_bcast", op="pow", make_inputs=_pow_inputs((2, 1, 4), (3, 1)),
           forward=_pow_fwd, backward=_pow_bwd),
    OpCase(id="pow_negative_base", op="pow", make_inputs=_negative_bases, forward=_pow_fwd,
           no_grad_reason="d/db takes log of a negative base (NaN); values only"),
]

CASES = WHERE + GATHER + GATHER_GRAD + UNARY + POW
