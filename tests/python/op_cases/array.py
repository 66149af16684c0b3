"""Rows for the array ops: reshape, flatten, transpose, slice, slice_grad, concat, cast.

References are numpy's own reshape / transpose / basic slicing / concatenate;
the backward references scatter into zeros or invert the permutation. Rows
with integer inputs check that the byte-generic kernels keep the dtype.
"""
import numpy as np

from op_table import ErrorCase, OpCase

F32 = "float32"
INT_REASON = "integer inputs: no gradient"


def randn(*shape):
    return lambda rng, dt: [rng.standard_normal(shape).astype(dt)]


def ints(dtype, *shape):
    return lambda rng, dt: [rng.integers(-100, 100, size=shape).astype(dtype)]


def _slices(x_shape, a):
    step = a.get("step") or [1] * len(x_shape)
    return tuple(slice(b, e, s) for b, e, s in zip(a["start"], a["stop"], step))


def slice_grad_ref(x_shape, dy, a):
    dx = np.zeros(x_shape, dy.dtype)
    dx[_slices(x_shape, a)] = dy
    return dx


def _inverse(perm):
    perm = [p % len(perm) for p in perm]
    return list(np.argsort(perm))


def concat_backward(xs, a, dys):
    bounds = np.cumsum([x.shape[a.get("axis", 0)] for x in xs])[:-1]
    return np.split(dys[0], bounds, axis=a.get("axis", 0))


# ---------------------------------------------------------------- reshape, flatten

RESHAPE = [
    OpCase(
        id="reshape_infer", op="reshape", attrs={"shape": [4, -1]},
        make_inputs=randn(2, 3, 4),
        forward=lambda xs, a: [xs[0].reshape(a["shape"])],
        backward=lambda xs, a, dys: [dys[0].reshape(xs[0].shape)],
        # [2, 3, 4] float32 -> [4, 6]: no arithmetic, 24 floats = 96 bytes written.
        cost_inputs=[([2, 3, 4], F32)], flops=0, memory_bytes=96,
        errors=[
            ErrorCase([([2, 3, 4], F32)], {"shape": [-1, -1]},
                      ["reshape", "shape=[-1, -1]", "at most one -1"]),
            ErrorCase([([2, 3, 4], F32)], {"shape": [5, 5]},
                      ["reshape", "x.shape=(2, 3, 4)", "24 elements", "shape=[5, 5]"]),
            ErrorCase([([2, 3, 4], F32)], {"shape": [5, -1]},
                      ["reshape", "x.shape=(2, 3, 4)", "shape=[5, -1]"]),
            ErrorCase([([2, 3, 4], F32)], {"shape": [-2, 12]}, ["reshape", "negative extent -2"]),
            ErrorCase([([2, 3, 4], F32)], {}, ["reshape", "'shape' is required"]),
            ErrorCase([([2, 3, 4], F32), ([2], F32)], {"shape": [24]},
                      ["reshape", "expects 1 inputs, got 2"]),
            ErrorCase([([2, 3, 4], F32)], {"shape": 24}, ["reshape", "'shape' must be list[int]"]),
        ],
    ),
    # Merges and splits of a split axis (S(a) -> S(b) when the mesh divides
    # both extents): [6, 4, 2] -> [24, 2] keeps rows together on [2], [3],
    # [3, 2] and [2, 1, 3]; [4, 12] -> [2, 2, 6, 2] also splits by heads
    # (S(1) -> S(2)) on [2] and [3].
    OpCase(
        id="reshape_merge_leading", op="reshape", attrs={"shape": [24, 2]},
        make_inputs=randn(6, 4, 2),
        forward=lambda xs, a: [xs[0].reshape(a["shape"])],
        backward=lambda xs, a, dys: [dys[0].reshape(xs[0].shape)],
    ),
    OpCase(
        id="reshape_split_heads", op="reshape", attrs={"shape": [2, 2, 6, 2]},
        make_inputs=randn(4, 12),
        forward=lambda xs, a: [xs[0].reshape(a["shape"])],
        backward=lambda xs, a, dys: [dys[0].reshape(xs[0].shape)],
    ),
    OpCase(
        id="reshape_keep_leading", op="reshape", attrs={"shape": [2, 12, 1]},
        make_inputs=randn(2, 3, 4),
        forward=lambda xs, a: [xs[0].reshape(a["shape"])],
        backward=lambda xs, a, dys: [dys[0].reshape(xs[0].shape)],
    ),
    OpCase(
        id="reshape_to_scalar", op="reshape", attrs={"shape": []},
        make_inputs=randn(1, 1),
        forward=lambda xs, a: [xs[0].reshape(())],
        backward=lambda xs, a, dys: [dys[0].reshape(xs[0].shape)],
    ),
    OpCase(
        id="reshape_int32", op="reshape", attrs={"shape": [-1]},
        make_inputs=ints(np.int32, 3, 5),
        forward=lambda xs, a: [xs[0].reshape(-1)],
        no_grad_reason=INT_REASON,
    ),
    OpCase(
        id="flatten_default", op="flatten",
        make_inputs=randn(2, 3, 4, 5),
        forward=lambda xs, a: [xs[0].reshape(2, 60)],
        backward=lambda xs, a, dys: [dys[0].reshape(xs[0].shape)],
        # [2, 3, 4, 5] float64 -> [2, 60]: 120 doubles = 960 bytes, no arithmetic.
        cost_inputs=[([2, 3, 4, 5], "float64")], flops=0, memory_bytes=960,
        errors=[
            ErrorCase([([2, 3], F32)], {"start_dim": 2}, ["flatten", "start_dim", "axis 2",
                                                          "2 dims"]),
            ErrorCase([([2, 3, 4], F32)], {"start_dim": 2, "end_dim": 1},
                      ["flatten", "start_dim=2 comes after end_dim=1", "(2, 3, 4)"]),
            ErrorCase([([2, 3, 4], F32)], {"end_dim": -4}, ["flatten", "end_dim", "axis -4"]),
            ErrorCase([], {}, ["flatten", "expects 1 inputs, got 0"]),
        ],
    ),
    OpCase(
        id="flatten_middle", op="flatten", attrs={"start_dim": 1, "end_dim": 2},
        make_inputs=randn(2, 3, 4, 5),
        forward=lambda xs, a: [xs[0].reshape(2, 12, 5)],
        backward=lambda xs, a, dys: [dys[0].reshape(xs[0].shape)],
    ),
    OpCase(
        id="flatten_negative_all", op="flatten", attrs={"start_dim": -3, "end_dim": -1},
        make_inputs=ints(np.int64, 3, 2, 2),
        forward=lambda xs, a: [xs[0].reshape(12)],
        no_grad_reason=INT_REASON,
    ),
]

# ---------------------------------------------------------------- transpose

TRANSPOSE = [
    OpCase(
        id="transpose_2d", op="transpose", attrs={"perm": [1, 0]},
        make_inputs=randn(3, 5),
        forward=lambda xs, a: [np.ascontiguousarray(xs[0].T)],
        backward=lambda xs, a, dys: [dys[0].T],
        # [3, 5] float32: 15 floats = 60 bytes moved, no arithmetic.
        cost_inputs=[([3, 5], F32)], flops=0, memory_bytes=60,
        errors=[
            ErrorCase([([2, 3, 4], F32)], {"perm": [0, 0, 1]},
                      ["transpose", "perm=[0, 0, 1]", "not a permutation of the axes 0..2"]),
            ErrorCase([([2, 3, 4], F32)], {"perm": [1, 0]},
                      ["transpose", "perm=[1, 0] has 2 entries", "3 dims"]),
            ErrorCase([([2, 3], F32)], {"perm": [0, 2]}, ["transpose", "perm=[0, 2]"]),
            ErrorCase([([2, 3], F32)], {}, ["transpose", "'perm' is required"]),
            ErrorCase([([2, 3], F32), ([2, 3], F32)], {"perm": [1, 0]},
                      ["transpose", "expects 1 inputs, got 2"]),
        ],
    ),
    OpCase(
        id="transpose_3d", op="transpose", attrs={"perm": [2, 0, 1]},
        make_inputs=randn(2, 3, 4),
        forward=lambda xs, a: [np.transpose(xs[0], a["perm"]).copy()],
        backward=lambda xs, a, dys: [np.transpose(dys[0], _inverse(a["perm"]))],
    ),
    OpCase(
        id="transpose_4d_negative", op="transpose", attrs={"perm": [0, -1, 1, 2]},
        make_inputs=randn(2, 3, 4, 5),
        forward=lambda xs, a: [np.transpose(xs[0], [0, 3, 1, 2]).copy()],
        backward=lambda xs, a, dys: [np.transpose(dys[0], _inverse(a["perm"]))],
    ),
    OpCase(
        id="transpose_int64", op="transpose", attrs={"perm": [1, 2, 0]},
        make_inputs=ints(np.int64, 3, 4, 2),
        forward=lambda xs, a: [np.transpose(xs[0], a["perm"]).copy()],
        no_grad_reason=INT_REASON,
    ),
]

# ---------------------------------------------------------------- slice, slice_grad

STEP2 = {"start": [1, 0], "stop": [4, 6], "step": [1, 2]}
NEGATIVE = {"start": [-3, 0, -100], "stop": [-1, 100, 5], "step": [2, 1, 3]}
TAIL = {"start": [0, 2], "stop": [100, 100]}  # no step: all 1; axis 0 untouched


def slice_row(name, shape, attrs, **extra):
    return OpCase(
        id=f"slice_{name}", op="slice", attrs=attrs, make_inputs=randn(*shape),
        forward=lambda xs, a: [xs[0][_slices(xs[0].shape, a)].copy()],
        backward=lambda xs, a, dys: [slice_grad_ref(xs[0].shape, dys[0], a)], **extra)


def slice_grad_row(name, shape, attrs, **extra):
    dy_shape = np.zeros(shape)[_slices(shape, attrs)].shape
    return OpCase(
        id=f"slice_grad_{name}", op="slice_grad", attrs=attrs,
        make_inputs=lambda rng, dt: [rng.standard_normal(shape).astype(dt),
                                     rng.standard_normal(dy_shape).astype(dt)],
        forward=lambda xs, a: [slice_grad_ref(xs[0].shape, xs[1], a)],
        # slice_grad is the adjoint of slice: d dy = slice(gdx); x_like gives only the shape.
        backward=lambda xs, a, dys: [None, dys[0][_slices(xs[0].shape, a)]], **extra)


SLICE = [
    slice_row(
        "step2", [5, 6], STEP2,
        # [5, 6][1:4, 0:6:2] -> [3, 3] float32: 9 floats = 36 bytes, no arithmetic.
        cost_inputs=[([5, 6], F32)], flops=0, memory_bytes=36,
        errors=[
            ErrorCase([([5, 6], F32)], {"start": [0, 0], "stop": [5, 6], "step": [1, 0]},
                      ["slice", "step=[1, 0]", ">= 1", "axis 1"]),
            ErrorCase([([5, 6], F32)], {"start": [0], "stop": [5, 6]},
                      ["slice", "'start'=[0]", "one value per axis", "(5, 6)"]),
            ErrorCase([([5, 6], F32)], {"start": [0, 0], "stop": [5, 6], "step": [1, 1, 1]},
                      ["slice", "'step'=[1, 1, 1]"]),
            ErrorCase([([5, 6], F32)], {"start": [0, 0]}, ["slice", "'stop' is required"]),
            ErrorCase([([5, 6], F32), ([5, 6], F32)], STEP2, ["slice", "expects 1 inputs, got 2"]),
        ]),
    slice_row("negative", [4, 5, 6], NEGATIVE),
    slice_row("tail", [3, 5], TAIL),
    OpCase(
        id="slice_int32", op="slice", attrs=NEGATIVE, make_inputs=ints(np.int32, 4, 5, 6),
        forward=lambda xs, a: [xs[0][_slices(xs[0].shape, a)].copy()],
        no_grad_reason=INT_REASON),
    slice_grad_row(
        "step2", [5, 6], STEP2,
        # dx [5, 6] float32 = 30 floats = 120 bytes (zero-fill and copy, no arithmetic).
        cost_inputs=[([5, 6], F32), ([3, 3], F32)], flops=0, memory_bytes=120,
        errors=[
            ErrorCase([([5, 6], F32), ([3, 2], F32)], STEP2,
                      ["slice_grad", "dy.shape=(3, 2)", "(3, 3)", "x_like.shape=(5, 6)"]),
            ErrorCase([([5, 6], F32), ([3, 3], "float64")], STEP2,
                      ["slice_grad", "dy.dtype=float64", "x_like.dtype=float32"]),
            ErrorCase([([5, 6], F32)], STEP2, ["slice_grad", "expects 2 inputs, got 1"]),
            ErrorCase([([5, 6], F32), ([3, 3], F32)], dict(STEP2, step=[-1, 1]),
                      ["slice_grad", "step=[-1, 1]", ">= 1"]),
        ]),
    slice_grad_row("negative", [4, 5, 6], NEGATIVE),
]

# ---------------------------------------------------------------- concat


def concat_row(name, shapes, attrs, **extra):
    return OpCase(
        id=f"concat_{name}", op="concat", attrs=attrs,
        make_inputs=lambda rng, dt: [rng.standard_normal(s).astype(dt) for s in shapes],
        forward=lambda xs, a: [np.concatenate(xs, axis=a.get("axis", 0))],
        backward=concat_backward, **extra)


CONCAT = [
    concat_row(
        "axis0", [(2, 3), (1, 3), (4, 3)], {},
        # [2, 3] + [1, 3] + [4, 3] float32 -> [7, 3]: 21 floats = 84 bytes, no arithmetic.
        cost_inputs=[([2, 3], F32), ([1, 3], F32), ([4, 3], F32)], flops=0, memory_bytes=84,
        errors=[
            ErrorCase([([2, 3], F32), ([2, 4], F32)], {},
                      ["concat", "inputs[1].shape=(2, 4)", "inputs[0].shape=(2, 3)", "axis 0"]),
            ErrorCase([([2, 3], F32), ([2, 3, 1], F32)], {"axis": 1},
                      ["concat", "inputs[1].shape=(2, 3, 1)"]),
            ErrorCase([([2, 3], F32), ([2, 3], "float64")], {},
                      ["concat", "inputs[1].dtype=float64", "inputs[0].dtype=float32"]),
            ErrorCase([([2, 3], F32), ([2, 3], F32)], {"axis": 2},
                      ["concat", "axis 2 is out of range", "2 dims"]),
            ErrorCase([], {}, ["concat", "at least one input"]),
        ]),
    concat_row("axis_negative", [(2, 3, 4), (2, 1, 4), (2, 2, 4)], {"axis": -2}),
    concat_row("last_axis", [(3, 2), (3, 5)], {"axis": 1}),
    concat_row("single", [(2, 5)], {"axis": 1}),
    OpCase(
        id="concat_int64", op="concat", attrs={"axis": 1},
        make_inputs=lambda rng, dt: [rng.integers(-9, 9, size=(2, k)).astype(np.int64)
                                     for k in (1, 3)],
        forward=lambda xs, a: [np.concatenate(xs, axis=1)],
        no_grad_reason=INT_REASON),
]

# cast to float64 and float32 (bfloat16 outputs are raw uint16 bits and
# cannot be fed back as cotangents: test_mixed_precision.py covers them).
CAST = [
    OpCase(
        id="cast_" + to, op="cast", attrs={"dtype": to},
        make_inputs=randn(3, 5),
        forward=lambda xs, a: [xs[0].astype(a["dtype"])],
        backward=lambda xs, a, dys: [dys[0].astype(xs[0].dtype)],
        cost_inputs=[([3, 5], F32)], flops=15.0,
        memory_bytes=15 * 4 + 15 * (8 if to == "float64" else 4),
        fd_eps=1e-2,  # cast is linear; a tiny step would measure float32 rounding
        errors=[
            ErrorCase([([2], F32)], {"dtype": "float16"},
                      ["cast", "dtype='float16'",
                       "expected float32, float64, bfloat16, int32, int64 or bool"]),
            ErrorCase([([2], F32)], {"dtype": "bogus"}, ["cast", "dtype='bogus'"]),
            ErrorCase([([2], "float16")], {"dtype": "float32"},
                      ["cast", "x.dtype=float16 cannot be cast"]),
        ])
    for to in ("float64", "float32")
]


def _cast_values(rng, dt):
    """Values with fractions of both signs, zeros and integers."""
    x = rng.uniform(-4, 4, (3, 4)).astype(dt)
    x[0, :2] = 0.0
    x[1, 0] = 3.0
    return [x]


# Integers and bools, from and to: truncation toward zero, x != 0, 0/1.
CAST += [
    OpCase(id="cast_to_int64", op="cast", attrs={"dtype": "int64"}, make_inputs=_cast_values,
           forward=lambda xs, a: [np.trunc(xs[0]).astype(np.int64)], no_grad_reason=INT_REASON),
    OpCase(id="cast_to_int32", op="cast", attrs={"dtype": "int32"}, make_inputs=_cast_values,
           forward=lambda xs, a: [xs[0].astype(np.int32)], no_grad_reason=INT_REASON),
    OpCase(id="cast_to_bool", op="cast", attrs={"dtype": "bool"}, make_inputs=_cast_values,
           forward=lambda xs, a: [xs[0] != 0], no_grad_reason="bool output"),
    OpCase(id="cast_int64_to_float", op="cast", attrs={"dtype": "float32"},
           make_inputs=lambda rng, dt: [rng.integers(-9, 9, (2, 3)).astype(np.int64)],
           forward=lambda xs, a: [xs[0].astype(np.float32)], no_grad_reason=INT_REASON),
    OpCase(id="cast_bool_to_float64", op="cast", attrs={"dtype": "float64"},
           make_inputs=lambda rng, dt: [rng.random((2, 3)) < 0.5],
           forward=lambda xs, a: [xs[0].astype(np.float64)], no_grad_reason="bool input"),
]

CASES = RESHAPE + TRANSPOSE + SLICE + CONCAT + CAST
