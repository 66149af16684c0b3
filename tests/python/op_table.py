"""The op test table's row type and the checks every row goes through.

One ``OpCase`` per row; rows live in ``op_cases/<family>.py`` as a list
``CASES``. ``test_ops.py`` runs every row through: the forward against the
row's numpy reference (float32 and float64), every input gradient against
the row's numpy-written backward (float32) and a central finite difference
(float64), the FLOP and memory estimate against a hand-worked value, and
the row's bad inputs against the error message they must give.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional, Sequence

import numpy as np

Array = np.ndarray
Desc = tuple  # (shape list, dtype name)


@dataclass
class ErrorCase:
    """Inputs (as (shape, dtype) descs) and attrs that must be rejected."""

    inputs: Sequence[Desc]
    attrs: dict
    must_contain: Sequence[str]  # substrings of the message, op name included


@dataclass
class OpCase:
    id: str                     # unique row name, e.g. "matmul_tb"
    op: str                     # registered op type
    # make_inputs(rng, float dtype) -> list of arrays; index inputs stay integer.
    make_inputs: Callable[[np.random.Generator, type], list]
    # forward(inputs, attrs) -> list of every output, in numpy, in the input dtype.
    forward: Callable[[list, dict], list]
    attrs: dict = field(default_factory=dict)
    # backward(inputs, attrs, output_grads) -> a gradient per input (None for
    # inputs without one). output_grads[i] is None for outputs that get none.
    backward: Optional[Callable[[list, dict, list], list]] = None
    no_grad_reason: str = ""    # why backward is None (required then)
    grad_outputs: Optional[Sequence[int]] = None  # outputs that get a cotangent; default all floating
    # Hand-worked cost for one shape: op_info(op, cost_inputs, cost_attrs).
    cost_inputs: Sequence[Desc] = ()
    cost_attrs: Optional[dict] = None
    flops: Optional[float] = None
    memory_bytes: Optional[int] = None
    errors: Sequence[ErrorCase] = ()
    mutates: bool = False       # update ops: run_op also returns the mutated inputs
    fd_eps: float = 1e-6
    fd_max_coords: int = 24     # finite-difference coordinates sampled per input
    f32_rtol: float = 1e-5
    f32_atol: float = 1e-6

    def __post_init__(self):
        if self.backward is None and not self.no_grad_reason:
            raise ValueError(f"{self.id}: a row without backward must say why (no_grad_reason)")


def float_inputs(case: OpCase, inputs: list) -> list:
    """Indices of the floating inputs (the ones that may have gradients)."""
    return [i for i, x in enumerate(inputs) if np.issubdtype(x.dtype, np.floating)]
