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


_GAINS = {"linear": 1.0, "identity": 1.0, "sigmoid": 1.0, "conv1d": 1.0, "conv2d": 1.0,
          "conv3d": 1.0, "conv_transpose1d": 1.0, "conv_transpose2d": 1.0,
          "conv_transpose3d": 1.0, "tanh": 5.0 / 3.0, "relu": math.sqrt(2.0),
          "selu": 3.0 / 4.0}


def calculate_gain(nonlinearity: str, param=None) -> float:
    """PyTorch's recommended gain: 1 (linear, sigmoid, conv), 5/3 (tanh),
    sqrt(2) (relu), sqrt(2 / (1 + a^2)) (leaky_relu, slope ``param``,
    default 0.01), 3/4 (selu)."""
    if nonlinearity == "leaky_relu":
        slope = 0.01 if param is None else float(param)
        return math.sqrt(2.0 / (1 + slope ** 2))
    gain = _GAINS.get(nonlinearity)
    if gain is None:
        raise ValueError(f"calculate_gain: unknown nonlinearity '{nonlinearity}' (one of "
                         f"{', '.join(sorted(_GAINS) + ['leaky_relu'])})")
    return gain


def _fan(t: Tensor, mode: str, what: str) -> int:
    fan_in, fan_out = fan_in_and_fan_out(t)
    fan = {"fan_in": fan_in, "fan_out": fan_out}.get(mode)
    if fan is None:
        raise ValueError(f"{what}: mode must be fan_in or fan_out, got '{mode}'")
    return fan


def xavier_uniform_(t: Tensor, gain: float = 1.0) -> Tensor:
    """U(-a, a), a = gain * sqrt(6 / (fan_in + fan_out)) (Glorot)."""
    fan_in, fan_out = fan_in_and_fan_out(t)
    bound = gain * math.sqrt(6.0 / (fan_in + fan_out))
    return uniform_(t, -bound, bound)


def xavier_normal_(t: Tensor, gain: float = 1.0) -> Tensor:
    """N(0, std^2), std = gain * sqrt(2 / (fan_in + fan_out)) (Glorot)."""
    fan_in, fan_out = fan_in_and_fan_out(t)
    return normal_(t, 0.0, gain * math.sqrt(2.0 / (fan_in + fan_out)))


def kaiming_uniform_(t: Tensor, a: float = 0.0, mode: str = "fan_in",
                     nonlinearity: str = "leaky_relu") -> Tensor:
    """U(-b, b), b = gain * sqrt(3 / fan) (He); gain from ``calculate_gain``
    (leaky_relu with slope ``a``: sqrt(2) at a=0)."""
    fan = _fan(t, mode, "kaiming_uniform_")
    bound = calculate_gain(nonlinearity, a) * math.sqrt(3.0 / fan)
    return uniform_(t, -bound, bound)


def kaiming_normal_(t: Tensor, a: float = 0.0, mode: str = "fan_in",
                    nonlinearity: str = "leaky_relu") -> Tensor:
    """N(0, gain^2 / fan) (He); gain from ``calculate_gain`` (leaky_relu
    with slope ``a``: sqrt(2) at a=0, as relu)."""
    fan = _fan(t, mode, "kaiming_normal_")
    return normal_(t, 0.0, calculate_gain(nonlinearity, a) / math.sqrt(fan))
