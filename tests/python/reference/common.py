"""Layers shared by the numpy references: forward and hand-written backward.

A forward returns ``(output, cache)``; the matching backward takes the cache
and the output gradient and returns the input gradients.
"""
from __future__ import annotations

import math

import numpy as np

_erf = np.frompyfunc(math.erf, 1, 1)


class Products:
    """The matrix products every reference computes: ``forward(a, b)`` for a
    forward product and ``backward(a, b)`` for one of a backward rule. Exact
    (np.matmul) unless a test swaps them, as the mixed-precision test does
    (inputs rounded to bfloat16) with ``monkeypatch.setattr``."""

    forward = staticmethod(np.matmul)
    backward = staticmethod(np.matmul)


def linear(x, w, b=None):
    """x [N, in] @ w [in, out] (+ b [out])."""
    y = Products.forward(x, w)
    return y if b is None else y + b


def linear_grads(x, w, dy, has_bias=True):
    """Gradients of y = x @ w (+ b): (dx, dw, db or None)."""
    dx = Products.backward(dy, w.T)
    dw = Products.backward(x.T, dy)
    db = dy.sum(axis=0) if has_bias else None
    return dx, dw, db


def relu(x):
    return np.maximum(x, 0)


def relu_backward(x, dy):
    return dy * (x > 0)


def gelu_forward(x):
    """Exact GELU: x * Phi(x) = 0.5 x (1 + erf(x / sqrt 2))."""
    cdf = 0.5 * (1.0 + _erf(x / math.sqrt(2.0)).astype(x.dtype))
    return x * cdf, (x, cdf)


def gelu_backward(cache, dy):
    x, cdf = cache
    pdf = np.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi)
    return dy * (cdf + x * pdf)


def softmax(x, axis=-1):
    z = x - x.max(axis=axis, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=axis, keepdims=True)


def softmax_backward(p, dp, axis=-1):
    return p * (dp - (dp * p).sum(axis=axis, keepdims=True))


def layer_norm_forward(x, gamma, beta, eps):
    """Normalises over the last axis (biased variance)."""
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    inv_std = 1.0 / np.sqrt(var + eps)
    xhat = (x - mean) * inv_std
    return xhat * gamma + beta, (xhat, inv_std, gamma)


def layer_norm_backward(cache, dy):
    """Returns (dx, dgamma, dbeta); dgamma and dbeta summed over leading axes."""
    xhat, inv_std, gamma = cache
    lead = tuple(range(dy.ndim - 1))
    dgamma = (dy * xhat).sum(axis=lead)
    dbeta = dy.sum(axis=lead)
    g = dy * gamma
    dx = inv_std * (g - g.mean(axis=-1, keepdims=True)
                    - xhat * (g * xhat).mean(axis=-1, keepdims=True))
    return dx, dgamma, dbeta


def cross_entropy(logits, labels):
    """Mean sparse softmax cross-entropy over every example.

    logits [..., C], integer labels [...]. Returns (loss, dlogits).
    """
    c = logits.shape[-1]
    flat = logits.reshape(-1, c)
    lab = labels.reshape(-1).astype(np.int64)
    if lab.min() < 0 or lab.max() >= c:
        raise ValueError(f"cross_entropy: labels must lie in [0, {c}), got [{lab.min()}, "
                         f"{lab.max()}]")
    n = flat.shape[0]
    z = flat - flat.max(axis=1, keepdims=True)
    logsumexp = np.log(np.exp(z).sum(axis=1))
    loss = (logsumexp - z[np.arange(n), lab]).mean()
    dflat = softmax(flat, axis=1)
    dflat[np.arange(n), lab] -= 1.0
    return loss, (dflat / n).reshape(logits.shape)
