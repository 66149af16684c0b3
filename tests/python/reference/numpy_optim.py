"""numpy SGD, Adam and AdamW with PyTorch semantics, and a training loop.

- SGD: g += wd * p; buf = momentum * buf + g (buf starts at 0); p -= lr * buf.
- Adam: g += wd * p, then Adam.
- AdamW: p *= 1 - lr * wd first, then Adam.
- Adam: m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g^2; with the step t of
  each parameter counted from 1, p -= lr * (m / (1 - b1^t)) /
  (sqrt(v / (1 - b2^t)) + eps).

``step(params, grads)`` updates the params dict in place.
"""
from __future__ import annotations

from typing import Callable, Iterable

import numpy as np


class SGD:
    def __init__(self, lr: float, momentum: float = 0.0, weight_decay: float = 0.0) -> None:
        self.lr, self.momentum, self.weight_decay = lr, momentum, weight_decay
        self.buffers = {}

    def step(self, params: dict, grads: dict) -> None:
        for name, g in grads.items():
            p = params[name]
            g = g + self.weight_decay * p
            buf = self.momentum * self.buffers.get(name, np.zeros_like(p)) + g
            self.buffers[name] = buf
            params[name] = p - self.lr * buf


class Adam:
    decoupled = False

    def __init__(self, lr: float, beta1: float = 0.9, beta2: float = 0.999, eps: float = 1e-8,
                 weight_decay: float = 0.0) -> None:
        self.lr, self.beta1, self.beta2 = lr, beta1, beta2
        self.eps, self.weight_decay = eps, weight_decay
        self.m, self.v, self.t = {}, {}, {}

    def step(self, params: dict, grads: dict) -> None:
        for name, g in grads.items():
            p = params[name]
            if self.decoupled:
                p = p * (1.0 - self.lr * self.weight_decay)
            else:
                g = g + self.weight_decay * p
            t = self.t.get(name, 0) + 1
            m = self.beta1 * self.m.get(name, np.zeros_like(p)) + (1.0 - self.beta1) * g
            v = self.beta2 * self.v.get(name, np.zeros_like(p)) + (1.0 - self.beta2) * g * g
            self.t[name], self.m[name], self.v[name] = t, m, v
            m_hat = m / (1.0 - self.beta1 ** t)
            v_hat = v / (1.0 - self.beta2 ** t)
            params[name] = p - self.lr * m_hat / (np.sqrt(v_hat) + self.eps)


class AdamW(Adam):
    decoupled = True


OPTIMIZERS = {"sgd": SGD, "adam": Adam, "adamw": AdamW}


def make_optimizer(kind: str, **hyper):
    """``kind`` in {"sgd", "adam", "adamw"}, hyper-parameters as in oneflow_lite's
    ``GraphBuilder.minimize``."""
    return OPTIMIZERS[kind](**hyper)


def train(loss_and_grads: Callable, params: dict, config, batches: Iterable, optimizer) -> tuple:
    """Runs one optimizer step per batch. Returns (losses before each step,
    final params). ``params`` is copied, never modified."""
    params = {name: np.array(value, copy=True) for name, value in params.items()}
    losses = []
    for batch in batches:
        loss, grads = loss_and_grads(params, config, batch)
        losses.append(float(loss))
        optimizer.step(params, grads)
    return np.array(losses), params
