"""Building blocks shared by the reference models (mlp, gpt, vgg).

Each helper appends ops to a ``GraphBuilder`` and returns tensor names. Op
names are given explicitly ("h0/attn/qkv/matmul"), so printed graphs and
strategies read like the model. Parameters are variables named after the
keys of the model's ``init_params`` dict.
"""
from __future__ import annotations

from typing import Dict, Optional

import numpy as np


class DropoutSeeds:
    """Hands out a distinct seed to every dropout op of one model."""

    def __init__(self, base: int) -> None:
        self._next = int(base)

    def take(self) -> int:
        seed = self._next
        self._next += 1
        return seed


def declare_variables(builder, params: Dict[str, np.ndarray]) -> None:
    """One trainable variable per entry of ``params``, in the dict's order."""
    for name, value in params.items():
        builder.variable(name, value, trainable=True)


def linear(builder, x: str, prefix: str, bias: bool = True) -> str:
    """``x @ W (+ b)`` for a 2-D ``x``; W is ``prefix.weight`` [in, out]."""
    y = builder.matmul(x, f"{prefix}.weight", name=f"{prefix}/matmul")
    if bias:
        y = builder.bias_add(y, f"{prefix}.bias", axis=1, name=f"{prefix}/bias_add")
    return y


def dropout(builder, x: str, rate: float, seeds: DropoutSeeds, name: str) -> str:
    """Dropout when ``rate > 0`` (train mode only); the identity otherwise."""
    if rate <= 0.0:
        return x
    y, _mask = builder.dropout(x, rate=float(rate), seed=seeds.take(), name=name)
    return y


def mean_cross_entropy(builder, logits: str, labels: str, name: str = "loss") -> str:
    """Mean over every example of the sparse softmax cross-entropy."""
    per_example = builder.sparse_softmax_cross_entropy(logits, labels, name=f"{name}/xent")
    return builder.reduce_mean(per_example, axes=[], keepdims=False, name=name)


def as_dtype(dtype) -> np.dtype:
    out = np.dtype(dtype)
    if out.kind != "f":
        raise ValueError(f"parameter dtype must be floating, got {out}")
    return out


def dtype_name(params: Dict[str, np.ndarray], fallback: Optional[str] = "float32") -> str:
    """The dtype name (e.g. "float32") of the model's parameters."""
    for value in params.values():
        return np.dtype(value.dtype).name
    return fallback
