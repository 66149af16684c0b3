"""``flow.nn.utils``: gradient clipping. Not thread-safe."""
from __future__ import annotations

from typing import Iterable, Union

import numpy as np

from oneflow_lite import _device
from oneflow_lite._tensor import Tensor


def clip_grad_norm_(parameters: Union[Tensor, Iterable[Tensor]], max_norm: float,
                    norm_type: float = 2.0, eps: float = 1e-6) -> Tensor:
    """Scales every ``.grad`` in place by min(1, max_norm / (total + eps)),
    where total is the norm of all gradients taken together (as one vector).
    A global gradient holds its logical value, so the norm is the logical
    one whatever its SBP. Returns the total norm (a float64 scalar tensor,
    accumulated in float64); ``norm_type`` may be ``float("inf")``. A NaN in
    any gradient makes the norm NaN and every gradient NaN (PyTorch's rule):
    the NaN is never clipped away."""
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    grads = [p.grad for p in parameters if p.grad is not None]
    if max_norm < 0:
        raise ValueError(f"clip_grad_norm_: max_norm={max_norm} is negative")
    norm_type = float(norm_type)
    if norm_type <= 0:
        raise ValueError(f"clip_grad_norm_: norm_type={norm_type} must be positive")
    if not grads:
        return Tensor._wrap(np.zeros((), np.float64))
    arrays = [g._array().astype(np.float64) for g in grads]
    if np.isinf(norm_type):  # np.max keeps a NaN (Python's max may drop it)
        total = float(np.max([np.abs(a).max() if a.size else 0.0 for a in arrays]))
    else:
        total = sum(float((np.abs(a) ** norm_type).sum()) for a in arrays) ** (1.0 / norm_type)
    coef = max_norm / (total + eps)
    if not coef >= 1.0:  # a NaN norm makes every gradient NaN, as in PyTorch
        for g in grads:
            scaled = (g._array() * coef).astype(g._array().dtype)
            g._value = _device.like_value(scaled, g._value)  # on g's device
    return Tensor._wrap(np.array(total, np.float64))
