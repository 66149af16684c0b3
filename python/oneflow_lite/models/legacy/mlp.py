"""MLP classifier: ``Linear + ReLU`` layers, then a Linear to the logits.

A Linear is ``y = x @ W + b`` with ``W`` of shape [in, out]. The loss is the
mean sparse softmax cross-entropy over the batch.

    >>> from oneflow_lite.graph_builder import GraphBuilder
    >>> from oneflow_lite.models.legacy import mlp
    >>> cfg = mlp.MLPConfig(in_features=8, hidden=(16,), num_classes=4)
    >>> params = mlp.init_params(cfg, seed=0)
    >>> b = GraphBuilder()
    >>> names = mlp.build(b, cfg, params, batch_size=2)
    >>> b.shape(names["logits"])
    [2, 4]
"""
from __future__ import annotations

from typing import Dict

import numpy as np

from oneflow_lite.models.config import MLPConfig, layer_sizes
from oneflow_lite.models.legacy.common import (DropoutSeeds, as_dtype, declare_variables,
                                               dropout,
                                        dtype_name, linear, mean_cross_entropy)


def init_params(config: MLPConfig, seed: int, dtype=np.float32) -> Dict[str, np.ndarray]:
    """PyTorch's default Linear init: W and b ~ U(-1/sqrt(in), 1/sqrt(in)).

    Names: ``fc{i}.weight`` [in, out] and ``fc{i}.bias`` [out], i = 0, 1, ...
    """
    dtype = as_dtype(dtype)
    rng = np.random.default_rng(seed)
    params = {}
    for i, (fan_in, fan_out) in enumerate(layer_sizes(config)):
        bound = 1.0 / np.sqrt(fan_in)
        params[f"fc{i}.weight"] = rng.uniform(-bound, bound, (fan_in, fan_out)).astype(dtype)
        params[f"fc{i}.bias"] = rng.uniform(-bound, bound, (fan_out,)).astype(dtype)
    return params


def build(builder, config: MLPConfig, params: Dict[str, np.ndarray], batch_size: int,
          train: bool = True) -> Dict[str, str]:
    """Declares inputs ``x`` [B, in] and ``labels`` [B] (int64), the
    variables and the forward.

    Returns the tensor names: ``data`` (x), ``labels``, ``logits`` [B,
    classes] and ``loss`` (scalar mean cross-entropy).
    """
    x = builder.input("x", [batch_size, config.in_features], dtype_name(params))
    labels = builder.input("labels", [batch_size], "int64")
    declare_variables(builder, params)
    seeds = DropoutSeeds(config.dropout_seed)
    h = x
    num_layers = len(layer_sizes(config))
    for i in range(num_layers):
        h = linear(builder, h, f"fc{i}")
        if i + 1 < num_layers:
            h = builder.relu(h, name=f"fc{i}/relu")
            if train:
                h = dropout(builder, h, config.dropout, seeds, f"fc{i}/dropout")
    loss = mean_cross_entropy(builder, h, labels)
    return {"data": x, "labels": labels, "logits": h, "loss": loss}
