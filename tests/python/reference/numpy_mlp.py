"""numpy MLP: Linear (x @ W + b, W [in, out]) + ReLU layers, Linear logits,
mean sparse cross-entropy. Forward and hand-written backward.

Config fields used: in_features, hidden (tuple), num_classes. Dropout is not
modelled (the reference is for rate 0). A batch is ``(x [B, in], labels [B])``.
"""
from __future__ import annotations

import numpy as np

from reference.common import cross_entropy, linear, linear_grads, relu, relu_backward


def param_shapes(config) -> dict:
    dims = [config.in_features, *config.hidden, config.num_classes]
    shapes = {}
    for i, (fan_in, fan_out) in enumerate(zip(dims[:-1], dims[1:])):
        shapes[f"fc{i}.weight"] = (fan_in, fan_out)
        shapes[f"fc{i}.bias"] = (fan_out,)
    return shapes


def random_params(config, rng: np.random.Generator, dtype=np.float64) -> dict:
    """Every entry random and non-zero (for gradient checks)."""
    return {name: (rng.standard_normal(shape) * 0.5).astype(dtype)
            for name, shape in param_shapes(config).items()}


def random_batch(config, batch_size: int, rng: np.random.Generator, dtype=np.float64):
    x = rng.standard_normal((batch_size, config.in_features)).astype(dtype)
    labels = rng.integers(0, config.num_classes, batch_size).astype(np.int64)
    return x, labels


def loss_and_grads(params: dict, config, batch) -> tuple:
    """Returns (mean loss, {param name: gradient})."""
    x, labels = batch
    x = np.asarray(x, dtype=params["fc0.weight"].dtype)
    num_layers = len(config.hidden) + 1
    inputs, pre = [], []
    h = x
    for i in range(num_layers):
        inputs.append(h)
        z = linear(h, params[f"fc{i}.weight"], params[f"fc{i}.bias"])
        pre.append(z)
        h = relu(z) if i + 1 < num_layers else z
    loss, dh = cross_entropy(h, labels)
    grads = {}
    for i in reversed(range(num_layers)):
        dz = dh if i + 1 == num_layers else relu_backward(pre[i], dh)
        dh, grads[f"fc{i}.weight"], grads[f"fc{i}.bias"] = linear_grads(
            inputs[i], params[f"fc{i}.weight"], dz)
    return loss, grads


def loss(params: dict, config, batch) -> float:
    return loss_and_grads(params, config, batch)[0]
