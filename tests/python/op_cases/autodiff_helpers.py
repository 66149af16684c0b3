"""Rows for the ops autodiff emits itself: add_n, ones_like, zeros_like."""
import numpy as np

from op_table import ErrorCase, OpCase

CASES = [
    OpCase(
        id="add_n_3",
        op="add_n",
        make_inputs=lambda rng, dt: [rng.standard_normal((3, 4)).astype(dt) for _ in range(3)],
        forward=lambda xs, a: [xs[0] + xs[1] + xs[2]],
        backward=lambda xs, a, dys: [dys[0], dys[0], dys[0]],
        cost_inputs=[([3, 4], "float32")] * 3,
        flops=2 * 12,            # two adds per element
        memory_bytes=12 * 4,     # one float32 output
        errors=[
            ErrorCase([([3, 4], "float32"), ([4, 3], "float32")], {},
                      ["add_n", "inputs[1].shape=(4, 3)", "(3, 4)"]),
            ErrorCase([([3], "float32"), ([3], "float64")], {},
                      ["add_n", "inputs[1].dtype=float64", "float32"]),
            ErrorCase([], {}, ["add_n", "at least one input"]),
            ErrorCase([([3], "int64")], {}, ["add_n", "int64"]),
        ],
    ),
    OpCase(
        id="ones_like",
        op="ones_like",
        make_inputs=lambda rng, dt: [rng.standard_normal((2, 5)).astype(dt)],
        forward=lambda xs, a: [np.ones_like(xs[0])],
        backward=lambda xs, a, dys: [np.zeros_like(xs[0])],
        cost_inputs=[([2, 5], "float64")],
        flops=0,
        memory_bytes=10 * 8,
        errors=[ErrorCase([([2], "float32"), ([2], "float32")], {}, ["ones_like", "expects 1 inputs, got 2"])],
    ),
    OpCase(
        id="zeros_like",
        op="zeros_like",
        make_inputs=lambda rng, dt: [rng.standard_normal((4,)).astype(dt)],
        forward=lambda xs, a: [np.zeros_like(xs[0])],
        backward=lambda xs, a, dys: [np.zeros_like(xs[0])],
        cost_inputs=[([4], "float32")],
        flops=0,
        memory_bytes=16,
    ),
]
