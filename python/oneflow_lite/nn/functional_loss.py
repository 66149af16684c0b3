"""Losses and ``one_hot`` of ``flow.nn.functional``, under PyTorch's names
and arguments: ``mse_loss``, ``l1_loss``, ``nll_loss``,
``binary_cross_entropy_with_logits``, ``one_hot``.

Each composes registered ops (``_dispatch.apply``), so autograd and
nn.Graph's tracer see them: |d| is relu(d) + relu(-d) (gradient sign(d),
0 at 0, as PyTorch); nll_loss gathers rows of a class-weighted identity
(``embedding``) and multiplies; the logistic loss is a two-way
``log_softmax`` over [0, x], stable for any x. Stateless; not thread-safe
(as the eager frontend).
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from oneflow_lite import _device, _dtype
from oneflow_lite._dispatch import apply
from oneflow_lite._tensor import Tensor

_REDUCTIONS = ("mean", "sum", "none")


def _reduce(what: str, loss: Tensor, reduction: str) -> Tensor:
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    if reduction == "none":
        return loss
    raise ValueError(f"{what}: unknown reduction '{reduction}' (mean, sum or none)")


def _same_shape(what: str, input: Tensor, target: Tensor) -> None:
    if tuple(input.shape) != tuple(target.shape):
        raise ValueError(f"{what}: target shape {list(target.shape)} differs from input shape "
                         f"{list(input.shape)}")
    if input.dtype is not target.dtype:
        raise TypeError(f"{what}: target dtype {target.dtype.name} differs from input dtype "
                        f"{input.dtype.name}")


def mse_loss(input: Tensor, target: Tensor, reduction: str = "mean") -> Tensor:
    """(input - target)^2, averaged (or summed, or per element)."""
    _same_shape("mse_loss", input, target)
    d = input - target
    return _reduce("mse_loss", d * d, reduction)


def l1_loss(input: Tensor, target: Tensor, reduction: str = "mean") -> Tensor:
    """|input - target|, averaged (or summed, or per element)."""
    _same_shape("l1_loss", input, target)
    d = input - target
    return _reduce("l1_loss", d.relu() + (-d).relu(), reduction)


def _check_ids(what: str, ids: np.ndarray, num_classes: int, ignore: Optional[int]) -> None:
    bad = (ids < 0) | (ids >= num_classes)
    if ignore is not None:
        bad &= ids != ignore
    if bad.any():
        i = np.unravel_index(int(np.argmax(bad)), ids.shape)
        raise IndexError(f"{what}: class index {int(ids[i])} at {list(map(int, i))} is outside "
                         f"[0, {num_classes})")


def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    """[..., num_classes] with a 1 at each index (``num_classes=-1``: the
    largest index + 1). Eager: int64, as PyTorch. Inside nn.Graph it is
    float32 (the rows of an identity gathered by ``embedding``), and
    ``num_classes`` must be given."""
    if tensor.dtype.is_floating_point:
        raise TypeError(f"one_hot: expects an integer tensor, got dtype {tensor.dtype.name}")
    if tensor._value is None:  # traced
        if num_classes < 1:
            raise ValueError("one_hot: give num_classes inside nn.Graph (the values are not "
                             "known while tracing)")
        return apply("embedding", [Tensor._wrap(np.eye(num_classes, dtype=np.float32)), tensor])
    ids = _device.host_value(tensor._value)
    if num_classes == -1:
        num_classes = int(ids.max()) + 1 if ids.size else 0
    _check_ids("one_hot", ids, num_classes, None)
    out = np.eye(num_classes, dtype=np.int64)[ids.astype(np.int64)]
    return Tensor._wrap(_device.like_value(out, tensor._value))


def nll_loss(input: Tensor, target: Tensor, weight: Optional[Tensor] = None,
             ignore_index: int = -100, reduction: str = "mean") -> Tensor:
    """-input[n, target[n]] * weight[target[n]] for log-probabilities input
    [N, C] (or [N, C, d1, ...] with target [N, d1, ...], or [C] with a 0-d
    target); "mean" divides by the sum of the picked weights, and targets
    equal to ``ignore_index`` count for nothing (eager targets; in a graph
    every target must be a class)."""
    if reduction not in _REDUCTIONS:
        raise ValueError(f"nll_loss: unknown reduction '{reduction}' (mean, sum or none)")
    if not input.dtype.is_floating_point or target.dtype.is_floating_point:
        raise TypeError(f"nll_loss: expects floating input and integer target, got "
                        f"{input.dtype.name} and {target.dtype.name}")
    batch = list(input.shape[:1]) + list(input.shape[2:]) if input.ndim > 1 else []
    if list(target.shape) != batch:
        raise ValueError(f"nll_loss: target shape {list(target.shape)} does not match input "
                         f"shape {list(input.shape)} (expected {batch})")
    classes = input.shape[1] if input.ndim > 1 else input.shape[0]
    x = input.reshape(1, classes) if input.ndim == 1 else input
    if x.ndim > 2:  # classes last, then one row per position
        x = x.permute([0] + list(range(2, x.ndim)) + [1])
    x = x.reshape(-1, classes)
    rows = np.eye(classes + 1, classes, dtype=_dtype.numpy_of(input.dtype))  # row C: ignored
    if weight is not None:
        if list(weight.shape) != [classes]:
            raise ValueError(f"nll_loss: weight shape {list(weight.shape)} != [{classes}]")
        rows[:classes] *= _device.host_value(weight._value)[:, None]
    ids = target.reshape(-1)
    if target._value is not None:
        values = _device.host_value(target._value).reshape(-1)
        _check_ids("nll_loss", values, classes, ignore_index)
        ids = Tensor._wrap(np.where(values == ignore_index, classes, values).astype(np.int64))
    picked = apply("embedding", [Tensor._wrap(rows), ids])  # [M, C]: weight at the target
    per = -(picked * x).sum(1)
    if reduction == "mean":
        return per.sum() / picked.sum()
    if reduction == "sum":
        return per.sum()
    return per.reshape(list(target.shape))


def binary_cross_entropy_with_logits(input: Tensor, target: Tensor,
                                     weight: Optional[Tensor] = None, reduction: str = "mean",
                                     pos_weight: Optional[Tensor] = None) -> Tensor:
    """-[pos_weight * y * log sigmoid(x) + (1 - y) * log sigmoid(-x)] * weight,
    with log sigmoid(+-x) from a log_softmax over [0, x] (stable)."""
    _same_shape("binary_cross_entropy_with_logits", input, target)
    axis = input.ndim
    x = input.unsqueeze(-1)
    both = apply("concat", [apply("zeros_like", [x]), x], {"axis": axis})
    log_sig = apply("log_softmax", [both], {"axis": axis})  # [log sig(-x), log sig(x)]
    y = target.unsqueeze(-1)
    pos = y if pos_weight is None else y * pos_weight.unsqueeze(-1)
    coef = apply("concat", [1.0 - y, pos], {"axis": axis})
    loss = -(coef * log_sig).sum(axis)
    if weight is not None:
        loss = loss * weight
    return _reduce("binary_cross_entropy_with_logits", loss, reduction)
