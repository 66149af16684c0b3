"""``nn.Parameter``: a leaf Tensor that a Module registers as trainable.

It shares its array with the tensor it was made from, keeps a meta tensor
meta (no value) and keeps a global tensor's placement and SBP (which the
tracer passes to nn.Graph as a pinned layout). Not thread-safe.
"""
from __future__ import annotations

import numpy as np

from oneflow_lite._tensor import Tensor


class Parameter(Tensor):
    """``nn.Parameter(flow.zeros(3, 4))``; ``requires_grad`` defaults to True."""

    def __init__(self, data=None, requires_grad: bool = True) -> None:  # noqa: D107
        if data is None:
            data = np.zeros((0,), np.float32)
        if isinstance(data, np.ndarray):
            self._init(np.ascontiguousarray(data), None, None, "cpu", False)
        elif isinstance(data, Tensor):
            self._init(data._value, data.shape, data.dtype, data.device, False)
            self._placement, self._sbp = data._placement, data._sbp
        else:
            raise TypeError(f"Parameter: data must be a flow.Tensor or numpy array, got "
                            f"{type(data).__name__}")
        if requires_grad:
            self.requires_grad_(True)

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()
