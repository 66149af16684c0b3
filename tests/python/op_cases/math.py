"""Rows for the math ops: matmul, batch_matmul, matmul_bias, add/sub/mul/div,
broadcast_to/sum_to, scalar_add/scalar_mul/scalar_pow, bias_add,
reduce_sum/reduce_mean. Backward references are written in numpy from the
calculus, independent of the ops' own gradient rules."""
import numpy as np

from op_table import ErrorCase, OpCase

F32 = "float32"
F64 = "float64"


def _normal(*shapes):
    return lambda rng, dt: [rng.standard_normal(s).astype(dt) for s in shapes]


def _unbroadcast(g, shape):
    """Sums g (an output-shaped gradient) down to `shape` by numpy's rules."""
    g = np.asarray(g)
    while g.ndim > len(shape):
        g = g.sum(axis=0)
    for i, d in enumerate(shape):
        if d == 1 and g.shape[i] != 1:
            g = g.sum(axis=i, keepdims=True)
    return g


# ---- matmul / batch_matmul ---------------------------------------------------

def _mm_forward(xs, a):
    x, y = xs
    if a.get("transpose_a"):
        x = np.swapaxes(x, -1, -2)
    if a.get("transpose_b"):
        y = np.swapaxes(y, -1, -2)
    return [np.matmul(x, y)]


def _mm_backward(xs, a, dys):
    x, y = xs
    ta, tb = a.get("transpose_a", False), a.get("transpose_b", False)
    A = np.swapaxes(x, -1, -2) if ta else x
    B = np.swapaxes(y, -1, -2) if tb else y
    dy = dys[0]
    dA = np.matmul(dy, np.swapaxes(B, -1, -2))
    dB = np.matmul(np.swapaxes(A, -1, -2), dy)
    return [np.swapaxes(dA, -1, -2) if ta else dA, np.swapaxes(dB, -1, -2) if tb else dB]


def _mm_row(id, op, a_shape, b_shape, attrs, **extra):
    return OpCase(id=id, op=op, make_inputs=_normal(a_shape, b_shape), forward=_mm_forward,
                  backward=_mm_backward, attrs=attrs, **extra)


MATMUL = [
    _mm_row(
        "matmul", "matmul", (3, 4), (4, 5), {},
        cost_inputs=[([64, 32], F32), ([32, 16], F32)],
        flops=2 * 64 * 16 * 32,   # 2*m*n*k = 65536
        memory_bytes=64 * 16 * 4,  # out (64, 16) float32 = 4096
        errors=[
            ErrorCase([([2, 64], F32), ([32, 3], F32)], {},
                      ["matmul: a.shape[1]=64 != b.shape[0]=32"]),
            ErrorCase([([2, 64], F32), ([64, 32], F32)], {"transpose_b": True},
                      ["matmul: a.shape[1]=64 != b.shape[1]=32", "transpose_b=true"]),
            ErrorCase([([2, 3, 4], F32), ([4, 5], F32)], {},
                      ["matmul: a must be 2-D", "a.shape=(2, 3, 4)"]),
            ErrorCase([([3, 4], F32), ([4, 5], F64)], {},
                      ["matmul: a.dtype=float32 != b.dtype=float64"]),
            ErrorCase([([3, 4], "int64"), ([4, 5], "int64")], {}, ["matmul", "int64"]),
            ErrorCase([([3, 4], F32)], {}, ["matmul", "expects 2 inputs, got 1"]),
            ErrorCase([([3, 4], F32), ([4, 5], F32)], {"transpose_c": True},
                      ["matmul", "unknown attribute 'transpose_c'"]),
        ],
    ),
    _mm_row("matmul_ta", "matmul", (4, 3), (4, 5), {"transpose_a": True},
            cost_inputs=[([32, 64], F64), ([32, 16], F64)],
            flops=2 * 64 * 16 * 32,    # m=64, n=16, k=32: 65536
            memory_bytes=64 * 16 * 8,  # out (64, 16) float64 = 8192
            errors=[ErrorCase([([4, 3], F32), ([3, 5], F32)], {"transpose_a": True},
                              ["matmul: a.shape[0]=4 != b.shape[0]=3", "transpose_a=true"])]),
    _mm_row("matmul_tb", "matmul", (3, 4), (5, 4), {"transpose_b": True}),
    _mm_row("matmul_ta_tb", "matmul", (4, 3), (5, 4), {"transpose_a": True, "transpose_b": True}),
    _mm_row(
        "batch_matmul", "batch_matmul", (2, 3, 4), (2, 4, 5), {},
        cost_inputs=[([2, 3, 4], F32), ([2, 4, 5], F32)],
        flops=2 * 2 * 3 * 5 * 4,    # 2*batch*m*n*k = 240
        memory_bytes=2 * 3 * 5 * 4,  # out (2, 3, 5) float32 = 120
        errors=[
            ErrorCase([([2, 3, 4], F32), ([3, 4, 5], F32)], {},
                      ["batch_matmul: batch dims a.shape[:-2]=(2) != b.shape[:-2]=(3)"]),
            ErrorCase([([2, 2, 3, 4], F32), ([2, 4, 5], F32)], {},
                      ["batch_matmul: batch dims", "(2, 2)", "(2)"]),
            ErrorCase([([2, 3, 4], F32), ([2, 3, 5], F32)], {},
                      ["batch_matmul: a.shape[-1]=4 != b.shape[-2]=3"]),
            ErrorCase([([3, 4], F32), ([4, 5], F32)], {},
                      ["batch_matmul: a must have at least 3 dims", "a.shape=(3, 4)"]),
            ErrorCase([([2, 3, 4], F64), ([2, 4, 5], F32)], {},
                      ["batch_matmul: a.dtype=float64 != b.dtype=float32"]),
            ErrorCase([([2, 3, 4], F32)] * 3, {}, ["batch_matmul", "expects 2 inputs, got 3"]),
        ],
    ),
    _mm_row("batch_matmul_4d_ta", "batch_matmul", (2, 2, 4, 3), (2, 2, 4, 5),
            {"transpose_a": True}),
    _mm_row("batch_matmul_tb", "batch_matmul", (3, 2, 4), (3, 5, 4), {"transpose_b": True}),
    _mm_row("batch_matmul_ta_tb", "batch_matmul", (2, 4, 3), (2, 5, 4),
            {"transpose_a": True, "transpose_b": True}),
]


# ---- matmul_bias: matmul + bias along the last axis ----------------------------

def _mmb_forward(xs, a):
    return [_mm_forward(xs[:2], a)[0] + xs[2]]


def _mmb_backward(xs, a, dys):
    return _mm_backward(xs[:2], a, dys) + [dys[0].sum(axis=0)]


def _mmb_row(id, a_shape, b_shape, n, attrs, **extra):
    return OpCase(id=id, op="matmul_bias", make_inputs=_normal(a_shape, b_shape, (n,)),
                  forward=_mmb_forward, backward=_mmb_backward, attrs=attrs, **extra)


MATMUL_BIAS = [
    _mmb_row(
        "matmul_bias", (3, 4), (4, 5), 5, {},
        cost_inputs=[([64, 32], F32), ([32, 16], F32), ([16], F32)],
        flops=2 * 64 * 16 * 32 + 64 * 16,  # 2*m*n*k and one add per element of out
        memory_bytes=64 * 16 * 4,           # out (64, 16) float32 = 4096
        errors=[
            ErrorCase([([2, 4], F32), ([4, 3], F32), ([4], F32)], {},
                      ["matmul_bias: bias.shape[0]=4 != out.shape[1]=3"]),
            ErrorCase([([2, 4], F32), ([4, 3], F32), ([1, 3], F32)], {},
                      ["matmul_bias: bias must be 1-D", "bias.shape=(1, 3)"]),
            ErrorCase([([2, 4], F32), ([4, 3], F32), ([3], F64)], {},
                      ["matmul_bias: bias.dtype=float64 != a.dtype=float32"]),
            ErrorCase([([2, 4], F32), ([4, 3], F32)], {}, ["matmul_bias", "expects 3 inputs"]),
        ]),
    _mmb_row("matmul_bias_tb", (3, 4), (5, 4), 5, {"transpose_b": True}),
    _mmb_row("matmul_bias_ta_tb", (4, 3), (5, 4), 5, {"transpose_a": True, "transpose_b": True}),
]


# ---- add / sub / mul / div -----------------------------------------------------

def _binary_inputs(a_shape, b_shape, positive_b=False):
    def make(rng, dt):
        a = rng.standard_normal(a_shape).astype(dt)
        if positive_b:  # denominators well away from 0
            b = rng.uniform(0.5, 2.0, b_shape).astype(dt)
        else:
            b = rng.standard_normal(b_shape).astype(dt)
        return [a, b]
    return make


def _add_bwd(xs, a, dys):
    return [_unbroadcast(dys[0], xs[0].shape), _unbroadcast(dys[0], xs[1].shape)]


def _sub_bwd(xs, a, dys):
    return [_unbroadcast(dys[0], xs[0].shape), -_unbroadcast(dys[0], xs[1].shape)]


def _mul_bwd(xs, a, dys):
    x, y = xs
    return [_unbroadcast(dys[0] * y, x.shape), _unbroadcast(dys[0] * x, y.shape)]


def _div_bwd(xs, a, dys):
    x, y = xs
    return [_unbroadcast(dys[0] / y, x.shape), _unbroadcast(-dys[0] * x / (y * y), y.shape)]


_BINARY = {
    "add": (np.add, _add_bwd),
    "sub": (np.subtract, _sub_bwd),
    "mul": (np.multiply, _mul_bwd),
    "div": (np.divide, _div_bwd),
}


def _binary_rows(op):
    fn, bwd = _BINARY[op]
    pos = op == "div"
    fwd = lambda xs, a: [fn(xs[0], xs[1])]
    return [
        OpCase(
            id=op, op=op, make_inputs=_binary_inputs((3, 4), (3, 4), pos), forward=fwd,
            backward=bwd,
            cost_inputs=[([2, 3, 4], F32), ([3, 1], F32)],
            flops=2 * 3 * 4,         # one op per output element of (2, 3, 4): 24
            memory_bytes=2 * 3 * 4 * 4,  # out (2, 3, 4) float32 = 96
            errors=[
                ErrorCase([([2, 3], F32), ([4], F32)], {},
                          [f"{op}: a.shape=(2, 3) and b.shape=(4) cannot be broadcast"]),
                ErrorCase([([3], F32), ([3], F64)], {},
                          [f"{op}: a.dtype=float32 != b.dtype=float64"]),
                ErrorCase([([3], F32)], {}, [op, "expects 2 inputs, got 1"]),
                ErrorCase([([3], "int32"), ([3], "int32")], {}, [op, "int32"]),
            ],
        ),
        # b broadcast along two axes (one missing, one of size 1)
        OpCase(id=f"{op}_bcast_b", op=op, make_inputs=_binary_inputs((2, 3, 4), (3, 1), pos),
               forward=fwd, backward=bwd),
        # a broadcast: a scalar-like (1,) against a matrix
        OpCase(id=f"{op}_bcast_a", op=op, make_inputs=_binary_inputs((1,), (2, 5), pos),
               forward=fwd, backward=bwd),
        # both broadcast: (3, 1) with (2, 1, 4) -> (2, 3, 4)
        OpCase(id=f"{op}_bcast_both", op=op, make_inputs=_binary_inputs((3, 1), (2, 1, 4), pos),
               forward=fwd, backward=bwd),
    ]


BINARY = [row for op in ("add", "sub", "mul", "div") for row in _binary_rows(op)]


# ---- broadcast_to / sum_to ------------------------------------------------------

def _expand(x_shape, rank, axes):
    """x's shape with size-1 axes inserted at `axes` (or leading ones)."""
    if not axes:
        return (1,) * (rank - len(x_shape)) + tuple(x_shape)
    axes = sorted(a % rank for a in axes)
    it = iter(x_shape)
    return tuple(1 if p in axes else next(it) for p in range(rank))


def _bcast_fwd(xs, a):
    shape = a["shape"]
    x = xs[0].reshape(_expand(xs[0].shape, len(shape), a.get("axes", [])))
    return [np.broadcast_to(x, shape).copy()]


def _bcast_bwd(xs, a, dys):
    shape = a["shape"]
    ex = _expand(xs[0].shape, len(shape), a.get("axes", []))
    g = dys[0]
    for i, d in enumerate(ex):
        if d == 1 and shape[i] != 1:
            g = g.sum(axis=i, keepdims=True)
    return [g.reshape(xs[0].shape)]


def _sum_to_fwd(xs, a):
    x = xs[0]
    ex = _expand(tuple(a["shape"]), x.ndim, a.get("axes", []))
    y = x
    for i, d in enumerate(ex):
        if d == 1 and x.shape[i] != 1:
            y = y.sum(axis=i, keepdims=True)
    return [y.reshape(a["shape"])]


def _sum_to_bwd(xs, a, dys):
    x = xs[0]
    ex = _expand(tuple(a["shape"]), x.ndim, a.get("axes", []))
    return [np.broadcast_to(dys[0].reshape(ex), x.shape).copy()]


BROADCAST = [
    OpCase(
        id="broadcast_to", op="broadcast_to", make_inputs=_normal((3, 1)),
        attrs={"shape": [2, 3, 4]}, forward=_bcast_fwd, backward=_bcast_bwd,
        cost_inputs=[([3, 1], F32)], cost_attrs={"shape": [2, 3, 4]},
        flops=0,                     # a copy
        memory_bytes=2 * 3 * 4 * 4,  # out (2, 3, 4) float32 = 96
        errors=[
            ErrorCase([([3, 2], F32)], {"shape": [3, 4]},
                      ["broadcast_to: x.shape=(3, 2) does not broadcast to shape=(3, 4)",
                       "axis 1: 2 vs 4"]),
            ErrorCase([([2, 3], F32)], {"shape": [3]},
                      ["broadcast_to: x.shape=(2, 3) has more dims than shape=(3)"]),
            ErrorCase([([2, 4], F32)], {"shape": [2, 3, 4], "axes": [3]},
                      ["broadcast_to: axes[0]=3 is out of range for 3 dims"]),
            ErrorCase([([4], F32)], {"shape": [2, 3, 4], "axes": [0, -3]},
                      ["broadcast_to: axes=[0, -3] names axis 0 twice"]),
            ErrorCase([([4], F32)], {"shape": [2, 3, 4], "axes": [0]},
                      ["broadcast_to: x.shape=(4) plus axes=[0] gives 2 dims"]),
            ErrorCase([([3], F32)], {}, ["broadcast_to", "attribute 'shape' is required"]),
            ErrorCase([([1], F32)], {"shape": [-2]}, ["broadcast_to: shape[0]=-2 is negative"]),
            ErrorCase([([3], "int32")], {"shape": [3]},
                      ["broadcast_to: x.dtype=int32 is not float32 or float64"]),
            ErrorCase([([3], F32), ([3], F32)], {"shape": [3]},
                      ["broadcast_to", "expects 1 inputs, got 2"]),
        ],
    ),
    # the keepdims-free form: x lacks axis 1 of the result
    OpCase(id="broadcast_to_axes", op="broadcast_to", make_inputs=_normal((2, 4)),
           attrs={"shape": [2, 3, 4], "axes": [1]}, forward=_bcast_fwd, backward=_bcast_bwd),
    OpCase(id="broadcast_to_axes_neg", op="broadcast_to", make_inputs=_normal((3,)),
           attrs={"shape": [2, 3, 4], "axes": [0, -1]}, forward=_bcast_fwd, backward=_bcast_bwd),
    OpCase(id="broadcast_to_scalar", op="broadcast_to", make_inputs=_normal(()),
           attrs={"shape": [2, 3]}, forward=_bcast_fwd, backward=_bcast_bwd),
    OpCase(
        id="sum_to", op="sum_to", make_inputs=_normal((2, 3, 4)),
        attrs={"shape": [3, 1]}, forward=_sum_to_fwd, backward=_sum_to_bwd,
        cost_inputs=[([2, 3, 4], F64)], cost_attrs={"shape": [3, 1]},
        flops=2 * 3 * 4,        # one add per input element: 24
        memory_bytes=3 * 1 * 8,  # out (3, 1) float64 = 24
        errors=[
            ErrorCase([([2, 3, 4], F32)], {"shape": [5]},
                      ["sum_to: shape=(5) does not broadcast to x.shape=(2, 3, 4)",
                       "axis 2: 5 vs 4"]),
            ErrorCase([([2, 3], F32)], {"shape": [2, 3], "axes": [2]},
                      ["sum_to: axes[0]=2 is out of range for 2 dims"]),
            ErrorCase([([3], F32)], {"shape": [1, 3]},
                      ["sum_to: shape=(1, 3) has more dims than x.shape=(3)"]),
            ErrorCase([([3], "int64")], {"shape": [3]},
                      ["sum_to: x.dtype=int64 is not float32 or float64"]),
            ErrorCase([], {"shape": [3]}, ["sum_to", "expects 1 inputs, got 0"]),
        ],
    ),
    OpCase(id="sum_to_lead", op="sum_to", make_inputs=_normal((2, 3, 4)),
           attrs={"shape": [4]}, forward=_sum_to_fwd, backward=_sum_to_bwd),
    OpCase(id="sum_to_axes", op="sum_to", make_inputs=_normal((2, 3, 4)),
           attrs={"shape": [2, 1], "axes": [1]}, forward=_sum_to_fwd, backward=_sum_to_bwd),
    OpCase(id="sum_to_scalar", op="sum_to", make_inputs=_normal((2, 3)),
           attrs={"shape": []}, forward=_sum_to_fwd, backward=_sum_to_bwd),
]


# ---- scalar ops -----------------------------------------------------------------

def _positive(shape):
    return lambda rng, dt: [rng.uniform(0.5, 2.0, shape).astype(dt)]


def _pow_row(id, exponent, make):
    return OpCase(
        id=id, op="scalar_pow", make_inputs=make, attrs={"exponent": exponent},
        forward=lambda xs, a: [np.power(xs[0], a["exponent"]).astype(xs[0].dtype)],
        backward=lambda xs, a, dys: [dys[0] * a["exponent"]
                                     * np.power(xs[0], a["exponent"] - 1)],
    )


SCALAR = [
    OpCase(
        id="scalar_add", op="scalar_add", make_inputs=_normal((3, 4)), attrs={"value": 1.5},
        forward=lambda xs, a: [xs[0] + xs[0].dtype.type(a["value"])],
        backward=lambda xs, a, dys: [dys[0]],
        cost_inputs=[([3, 4], F32)], flops=12,  # one add per element of (3, 4)
        memory_bytes=12 * 4,                    # out (3, 4) float32 = 48
        errors=[
            ErrorCase([([3], F32)], {}, ["scalar_add", "attribute 'value' is required"]),
            ErrorCase([([3], "int64")], {"value": 1.0},
                      ["scalar_add: x.dtype=int64 is not float32 or float64"]),
            ErrorCase([([3], F32), ([3], F32)], {"value": 1.0},
                      ["scalar_add", "expects 1 inputs, got 2"]),
        ],
    ),
    OpCase(
        id="scalar_mul", op="scalar_mul", make_inputs=_normal((2, 5)), attrs={"value": -2.5},
        forward=lambda xs, a: [xs[0] * xs[0].dtype.type(a["value"])],
        backward=lambda xs, a, dys: [dys[0] * a["value"]],
        cost_inputs=[([2, 5], F64)], flops=10,  # one multiply per element of (2, 5)
        memory_bytes=10 * 8,                    # out (2, 5) float64 = 80
        errors=[
            ErrorCase([([3], F32)], {"value": "two"},
                      ["scalar_mul", "attribute 'value' must be float"]),
            ErrorCase([], {"value": 1.0}, ["scalar_mul", "expects 1 inputs, got 0"]),
            ErrorCase([([3], "int64")], {"value": 1.0},
                      ["scalar_mul: x.dtype=int64 is not float32 or float64"]),
        ],
    ),
    OpCase(id="scalar_mul_int_value", op="scalar_mul", make_inputs=_normal((4,)),
           attrs={"value": 3},  # an int is promoted to the float attribute
           forward=lambda xs, a: [xs[0] * xs[0].dtype.type(3)],
           backward=lambda xs, a, dys: [dys[0] * 3]),
    _pow_row("scalar_pow", 2.5, _positive((3, 4))),
    _pow_row("scalar_pow_square", 2.0, _normal((3, 4))),
    _pow_row("scalar_pow_neg", -1.5, _positive((5,))),
    _pow_row("scalar_pow_zero", 0.0, _normal((2, 3))),
    _pow_row("scalar_pow_one", 1.0, _normal((2, 3))),
]
SCALAR[3].cost_inputs = [([3, 4], F32)]
SCALAR[3].flops = 12              # pow counted as one flop per element of (3, 4)
SCALAR[3].memory_bytes = 12 * 4   # out (3, 4) float32 = 48
SCALAR[3].errors = [
    ErrorCase([([3], F32)], {}, ["scalar_pow", "attribute 'exponent' is required"]),
    ErrorCase([([3], "int32")], {"exponent": 2.0},
              ["scalar_pow: x.dtype=int32 is not float32 or float64"]),
    ErrorCase([([3], F32)] * 2, {"exponent": 2.0}, ["scalar_pow", "expects 1 inputs, got 2"]),
]


# ---- bias_add ---------------------------------------------------------------------

def _bias_fwd(xs, a):
    x, b = xs
    axis = a.get("axis", 1) % x.ndim
    shape = [1] * x.ndim
    shape[axis] = b.shape[0]
    return [x + b.reshape(shape)]


def _bias_bwd(xs, a, dys):
    x = xs[0]
    axis = a.get("axis", 1) % x.ndim
    others = tuple(i for i in range(x.ndim) if i != axis)
    return [dys[0], dys[0].sum(axis=others) if others else dys[0]]


BIAS = [
    OpCase(
        id="bias_add", op="bias_add", make_inputs=_normal((2, 3, 4), (3,)),
        forward=_bias_fwd, backward=_bias_bwd,
        cost_inputs=[([2, 3, 4], F32), ([3], F32)],
        flops=2 * 3 * 4,             # one add per element of x: 24
        memory_bytes=2 * 3 * 4 * 4,  # out (2, 3, 4) float32 = 96
        errors=[
            ErrorCase([([2, 3], F32), ([4], F32)], {},
                      ["bias_add: bias.shape[0]=4 != x.shape[1]=3"]),
            ErrorCase([([2, 3], F32), ([3], F32)], {"axis": 2},
                      ["bias_add: axis=2 is out of range for x.shape=(2, 3)"]),
            ErrorCase([([2, 3], F32), ([1, 3], F32)], {},
                      ["bias_add: bias must be 1-D, got bias.shape=(1, 3)"]),
            ErrorCase([([2, 3], F32), ([3], F64)], {},
                      ["bias_add: x.dtype=float32 != bias.dtype=float64"]),
            ErrorCase([([2, 3], F32)], {}, ["bias_add", "expects 2 inputs, got 1"]),
        ],
    ),
    OpCase(id="bias_add_last", op="bias_add", make_inputs=_normal((4, 5), (5,)),
           attrs={"axis": -1}, forward=_bias_fwd, backward=_bias_bwd),
    OpCase(id="bias_add_1d", op="bias_add", make_inputs=_normal((6,), (6,)),
           attrs={"axis": 0}, forward=_bias_fwd, backward=_bias_bwd),
    OpCase(id="bias_add_axis0", op="bias_add", make_inputs=_normal((3, 2, 2), (3,)),
           attrs={"axis": 0}, forward=_bias_fwd, backward=_bias_bwd),
    # An empty axis after the bias axis (no element at all: nothing to add, no
    # division by the empty row length).
    OpCase(id="bias_add_empty_inner", op="bias_add", make_inputs=_normal((2, 3, 0), (3,)),
           attrs={"axis": 1}, forward=_bias_fwd, backward=_bias_bwd),
]


# ---- reduce_sum / reduce_mean -------------------------------------------------------

def _axes(a, ndim):
    axes = a.get("axes", [])
    return tuple(range(ndim)) if not axes else tuple(ax % ndim for ax in axes)


def _reduce_fwd(fn):
    def fwd(xs, a):
        x = xs[0]
        return [np.asarray(fn(x, axis=_axes(a, x.ndim), keepdims=a.get("keepdims", False)),
                           dtype=x.dtype)]
    return fwd


def _reduce_bwd(mean):
    def bwd(xs, a, dys):
        x = xs[0]
        axes = _axes(a, x.ndim)
        g = np.asarray(dys[0])
        if not a.get("keepdims", False):
            g = np.expand_dims(g, axes)
        count = np.prod([x.shape[i] for i in axes]) if mean else 1
        return [np.broadcast_to(g / count, x.shape).astype(x.dtype)]
    return bwd


def _reduce_row(id, op, shape, attrs, **extra):
    mean = op == "reduce_mean"
    return OpCase(id=id, op=op, make_inputs=_normal(shape), attrs=attrs,
                  forward=_reduce_fwd(np.mean if mean else np.sum),
                  backward=_reduce_bwd(mean), **extra)


def _reduce_errors(op):
    return [
        ErrorCase([([2, 3], F32)], {"axes": [2]},
                  [f"{op}: axes[0]=2 is out of range for 2 dims", "x.shape=(2, 3)"]),
        ErrorCase([([2, 3], F32)], {"axes": [1, -1]}, [f"{op}: axes=[1, -1] names axis 1 twice"]),
        ErrorCase([([2, 3], "int64")], {}, [f"{op}: x.dtype=int64 is not float32 or float64"]),
        ErrorCase([([2, 3], F32)] * 2, {}, [op, "expects 1 inputs, got 2"]),
        ErrorCase([([2, 3], F32)], {"axes": [0], "keepdims": 1},
                  [op, "attribute 'keepdims' must be bool"]),
    ]


REDUCE = [
    _reduce_row("reduce_sum", "reduce_sum", (2, 3, 4), {"axes": [1]},
                cost_inputs=[([2, 3, 4], F32)], cost_attrs={"axes": [1]},
                flops=2 * 3 * 4,         # one add per input element: 24
                memory_bytes=2 * 4 * 4,  # out (2, 4) float32 = 32
                errors=_reduce_errors("reduce_sum")),
    _reduce_row("reduce_sum_keepdims", "reduce_sum", (2, 3, 4), {"axes": [0, 2], "keepdims": True}),
    _reduce_row("reduce_sum_all", "reduce_sum", (3, 4), {}),
    _reduce_row("reduce_sum_neg", "reduce_sum", (2, 3, 4), {"axes": [-1, 0]}),
    _reduce_row("reduce_sum_lead", "reduce_sum", (5, 3), {"axes": [0]}),
    _reduce_row("reduce_mean", "reduce_mean", (2, 3, 4), {"axes": [1]},
                cost_inputs=[([2, 3, 4], F64)], cost_attrs={"axes": [1]},
                flops=2 * 3 * 4 + 2 * 4,  # 24 adds + 8 scalings of the (2, 4) output = 32
                memory_bytes=2 * 4 * 8,   # out (2, 4) float64 = 64
                errors=_reduce_errors("reduce_mean")),
    _reduce_row("reduce_mean_all_keepdims", "reduce_mean", (3, 4), {"keepdims": True}),
    _reduce_row("reduce_mean_all", "reduce_mean", (2, 3), {"axes": []}),
    _reduce_row("reduce_mean_neg", "reduce_mean", (2, 3, 4), {"axes": [-1, -3]}),
]


CASES = MATMUL + MATMUL_BIAS + BINARY + BROADCAST + SCALAR + BIAS + REDUCE
