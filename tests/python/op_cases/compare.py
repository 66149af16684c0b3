"""Rows for the ops with bool or index outputs: the comparisons (equal,
not_equal, less, less_equal, greater, greater_equal), reduce_any/reduce_all
and argmax/argmin. None has a gradient (their outputs are not floating).
Inputs hold small integers so that ties and equal elements occur; the
references are numpy's own functions."""
import numpy as np

from op_table import ErrorCase, OpCase

F32 = "float32"
NO_GRAD = "bool or int64 output: nothing to differentiate"


def _small(*shapes, dtype=None):
    """Integers in [-2, 2] in the row's float dtype (or `dtype`): many ties."""
    def make(rng, dt):
        return [np.asarray(rng.integers(-2, 3, size=s)).astype(dtype or dt) for s in shapes]
    return make


def _with_nan(rng, dt):
    a = rng.integers(-2, 3, size=(3, 4)).astype(dt)
    b = rng.integers(-2, 3, size=(3, 4)).astype(dt)
    a[0, 1] = b[0, 1] = np.nan  # NaN against NaN
    a[1, 2] = np.nan            # NaN against a number
    b[2, 3] = np.nan            # and a number against NaN
    return [a, b]


_COMPARE = {
    "equal": np.equal, "not_equal": np.not_equal, "less": np.less,
    "less_equal": np.less_equal, "greater": np.greater, "greater_equal": np.greater_equal,
}


def _compare_rows(op):
    fn = _COMPARE[op]
    fwd = lambda xs, a: [fn(xs[0], xs[1])]
    return [
        OpCase(id=op, op=op, make_inputs=_small((3, 4), (3, 4)), forward=fwd,
               no_grad_reason=NO_GRAD,
               cost_inputs=[([2, 3, 4], F32), ([3, 1], F32)],
               flops=2 * 3 * 4,          # one comparison per output element: 24
               memory_bytes=2 * 3 * 4,   # out (2, 3, 4) bool = 24 bytes
               errors=[
                   ErrorCase([([2, 3], F32), ([4], F32)], {},
                             [f"{op}: a.shape=(2, 3) and b.shape=(4) cannot be broadcast"]),
                   ErrorCase([([3], F32), ([3], "int64")], {},
                             [f"{op}: a.dtype=float32 != b.dtype=int64"]),
                   ErrorCase([([3], "bfloat16"), ([3], "bfloat16")], {},
                             [f"{op}: dtype bfloat16 is not"]),
               ]),
        OpCase(id=f"{op}_bcast", op=op, make_inputs=_small((2, 1, 4), (3, 1)), forward=fwd,
               no_grad_reason=NO_GRAD),
        OpCase(id=f"{op}_scalar", op=op, make_inputs=_small((2, 3), ()), forward=fwd,
               no_grad_reason=NO_GRAD),
        OpCase(id=f"{op}_nan", op=op, make_inputs=_with_nan, forward=fwd,
               no_grad_reason=NO_GRAD),
        OpCase(id=f"{op}_int64", op=op, make_inputs=_small((4, 3), (3,), dtype=np.int64),
               forward=fwd, no_grad_reason=NO_GRAD),
        OpCase(id=f"{op}_int32", op=op, make_inputs=_small((3, 2), (3, 1), dtype=np.int32),
               forward=fwd, no_grad_reason=NO_GRAD),
        OpCase(id=f"{op}_bool", op=op,
               make_inputs=lambda rng, dt: [rng.random((3, 4)) < 0.5, rng.random((4,)) < 0.5],
               forward=fwd, no_grad_reason=NO_GRAD),
    ]


COMPARE = [row for op in _COMPARE for row in _compare_rows(op)]


# ---- reduce_any / reduce_all ------------------------------------------------------------

def _sparse(shape, dtype=None):
    """Mostly zeros, so that any and all both vary along the axes."""
    def make(rng, dt):
        x = (rng.random(shape) < 0.3) * rng.integers(1, 4, size=shape)
        x[0] = 1  # one row that is nonzero everywhere: all() is true somewhere
        return [x.astype(dtype or dt)]
    return make


def _logical_fwd(fn):
    def fwd(xs, a):
        axes = tuple(a.get("axes", [])) or None
        return [np.asarray(fn(xs[0] != 0, axis=axes, keepdims=a.get("keepdims", False)))]
    return fwd


def _logical_rows(op, fn):
    fwd = _logical_fwd(fn)
    return [
        OpCase(id=op, op=op, make_inputs=_sparse((4, 3)), forward=fwd, no_grad_reason=NO_GRAD,
               cost_inputs=[([4, 3, 5], F32)], cost_attrs={"axes": [1]},
               flops=4 * 3 * 5,        # one test per input element: 60
               memory_bytes=4 * 5,     # out (4, 5) bool
               errors=[
                   ErrorCase([([2, 3], F32)], {"axes": [2]},
                             [f"{op}: axes[0]=2 is out of range for 2 dims", "x.shape=(2, 3)"]),
                   ErrorCase([([2, 3], "bfloat16")], {}, [f"{op}: x.dtype=bfloat16"]),
               ]),
        OpCase(id=f"{op}_axis1", op=op, make_inputs=_sparse((4, 3)), attrs={"axes": [1]},
               forward=fwd, no_grad_reason=NO_GRAD),
        OpCase(id=f"{op}_axes02_keep", op=op, make_inputs=_sparse((2, 3, 4)),
               attrs={"axes": [0, -1], "keepdims": True}, forward=fwd, no_grad_reason=NO_GRAD),
        OpCase(id=f"{op}_bool", op=op, make_inputs=_sparse((3, 5), dtype=np.bool_),
               attrs={"axes": [0]}, forward=fwd, no_grad_reason=NO_GRAD),
        OpCase(id=f"{op}_int64", op=op, make_inputs=_sparse((3, 5), dtype=np.int64),
               attrs={"axes": [1]}, forward=fwd, no_grad_reason=NO_GRAD),
        # An empty reduction: any is false, all is true (numpy's rule).
        OpCase(id=f"{op}_empty", op=op, make_inputs=lambda rng, dt: [np.zeros((0, 3), dt)],
               attrs={"axes": [0]}, forward=fwd, no_grad_reason=NO_GRAD),
    ]


LOGICAL = _logical_rows("reduce_any", np.any) + _logical_rows("reduce_all", np.all)


# ---- argmax / argmin --------------------------------------------------------------------

def _arg_fwd(fn):
    def fwd(xs, a):
        out = fn(xs[0], axis=a["axis"], keepdims=a.get("keepdims", False))
        return [np.asarray(out, dtype=np.int64)]
    return fwd


def _arg_nan(rng, dt):
    x = rng.standard_normal((3, 4)).astype(dt)
    x[1, 2] = np.nan  # numpy and PyTorch: the first NaN is both the max and the min
    x[2, 0] = x[2, 3] = np.nan
    return [x]


def _arg_rows(op, fn):
    fwd = _arg_fwd(fn)
    return [
        OpCase(id=op, op=op, make_inputs=_small((4, 5)), attrs={"axis": 1}, forward=fwd,
               no_grad_reason=NO_GRAD,
               cost_inputs=[([4, 5], F32)], cost_attrs={"axis": 0},
               flops=4 * 5,          # one comparison per input element
               memory_bytes=5 * 8,   # out (5,) int64
               errors=[
                   ErrorCase([([2, 3], F32)], {"axis": 2},
                             [f"{op}: axis=2 is out of range for 2 dims", "x.shape=(2, 3)"]),
                   ErrorCase([([2, 3], F32)], {"axis": -3}, [f"{op}: axis=-3 is out of range"]),
                   ErrorCase([([2, 0], F32)], {"axis": 1}, [f"{op}: axis 1 of x.shape=(2, 0)",
                                                            "is empty"]),
                   ErrorCase([([], F32)], {"axis": 0}, [f"{op}: x is a scalar"]),
                   ErrorCase([([3], "bool")], {"axis": 0}, [f"{op}: x.dtype=bool"]),
                   ErrorCase([([3], F32)], {}, [op, "axis"]),
               ]),
        OpCase(id=f"{op}_axis0_keep", op=op, make_inputs=_small((4, 5)),
               attrs={"axis": 0, "keepdims": True}, forward=fwd, no_grad_reason=NO_GRAD),
        OpCase(id=f"{op}_3d_neg", op=op, make_inputs=_small((2, 3, 4)), attrs={"axis": -2},
               forward=fwd, no_grad_reason=NO_GRAD),
        OpCase(id=f"{op}_nan", op=op, make_inputs=_arg_nan, attrs={"axis": 1}, forward=fwd,
               no_grad_reason=NO_GRAD),
        OpCase(id=f"{op}_int32", op=op, make_inputs=_small((3, 6), dtype=np.int32),
               attrs={"axis": 1}, forward=fwd, no_grad_reason=NO_GRAD),
    ]


ARG = _arg_rows("argmax", np.argmax) + _arg_rows("argmin", np.argmin)

CASES = COMPARE + LOGICAL + ARG
