"""``flow.nn.init``: in-place initialisers drawing from the generator that
``flow.manual_seed`` resets. On a meta tensor (no value) they do nothing, so
a model declared on the meta device costs no memory. Not thread-safe.
"""
from __future__ import annotations

import math

import numpy as np

from oneflow_lite import _device, _random
from oneflow_lite import _dtype as dtypes
from oneflow_lite._tensor import Tensor


def _fill(t: Tensor, draw) -> Tensor:
    if _device.is_device_value(t._value):  # drawn on the host, then copied over
        t._value = _device.like_value(draw(t.shape).astype(dtypes.numpy_of(t.dtype)), t._value)
    elif t._value is not None:
        t._value[...] = draw(t.shape).astype(t._value.dtype)
    return t


def uniform_(t: Tensor, a: float = 0.0, b: float = 1.0) -> Tensor:
    return _fill(t, lambda s: _random.generator().uniform(a, b, s))


def normal_(t: Tensor, mean: float = 0.0, std: float = 1.0) -> Tensor:
    return _fill(t, lambda s: _random.generator().standard_normal(s) * std + mean)


def zeros_(t: Tensor) -> Tensor:
    return _fill(t, np.zeros)


def ones_(t: Tensor) -> Tensor:
    return _fill(t, np.ones)


def constant_(t: Tensor, value: float) -> Tensor:
    return _fill(t, lambda s: np.full(s, value))


def fan_in_and_fan_out(t: Tensor) -> tuple:
    """PyTorch's rule: weight [out, in, *kernel] -> (in * k, out * k)."""
    if t.ndim < 2:
        raise ValueError(f"fan in/out need a weight of 2 or more dims, got shape {list(t.shape)}")
    receptive = int(np.prod(t.shape[2:], dtype=np.int64)) if t.ndim > 2 else 1
    return t.shape[1] * receptive, t.shape[0] * receptive


def kaiming_normal_(t: Tensor, mode: str = "fan_in", nonlinearity: str = "relu") -> Tensor:
    """N(0, gain^2 / fan), gain sqrt(2) for ReLU (1 for linear)."""
    fan_in, fan_out = fan_in_and_fan_out(t)
    fan = {"fan_in": fan_in, "fan_out": fan_out}.get(mode)
    if fan is None:
        raise ValueError(f"kaiming_normal_: mode must be fan_in or fan_out, got '{mode}'")
    gain = math.sqrt(2.0) if nonlinearity == "relu" else 1.0
    return normal_(t, 0.0, gain / math.sqrt(fan))
