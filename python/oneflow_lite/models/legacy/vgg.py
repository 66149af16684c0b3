"""VGG-style convolutional classifier on NCHW images.

``config.features`` lists the feature extractor: an int is a 3x3 conv with
padding 1 and that many output channels, + bias + ReLU; ``"M"`` is a 2x2 max
pool with stride 2. Then flatten, and per entry of ``config.fc`` a Linear +
ReLU (+ optional dropout), and a final Linear to ``num_classes`` logits. The
loss is the mean sparse softmax cross-entropy.

``vgg16_config()`` is torchvision's VGG16 layout (13 convs, FC 4096-4096) for
benchmarks; the small default config is for tests.

    >>> from oneflow_lite.graph_builder import GraphBuilder
    >>> from oneflow_lite.models.legacy import vgg
    >>> cfg = vgg.VGGConfig(features=(4, "M"), image_size=8, fc=(16,), num_classes=3)
    >>> params = vgg.init_params(cfg, seed=0)
    >>> b = GraphBuilder()
    >>> names = vgg.build(b, cfg, params, batch_size=2)
    >>> b.shape(names["logits"])
    [2, 3]
"""
from __future__ import annotations

from typing import Dict

import numpy as np

from oneflow_lite.models.config import (VGGConfig, conv_channels, fc_sizes,  # noqa: F401
                                         vgg16_config)
from oneflow_lite.models.legacy.common import (DropoutSeeds, as_dtype, declare_variables,
                                               dropout,
                                        dtype_name, linear, mean_cross_entropy)

def init_params(config: VGGConfig, seed: int, dtype=np.float32) -> Dict[str, np.ndarray]:
    """Convs: Kaiming normal (fan_out, ReLU) as torchvision, bias 0; Linears:
    PyTorch's default U(-1/sqrt(in), 1/sqrt(in)) for W and b.

    Names: ``conv{i}.weight`` [O, C, 3, 3], ``conv{i}.bias`` [O];
    ``fc{j}.weight`` [in, out], ``fc{j}.bias`` [out]; the logits layer is the
    last fc.
    """
    dtype = as_dtype(dtype)
    rng = np.random.default_rng(seed)
    params = {}
    for i, (cin, cout) in enumerate(conv_channels(config)):
        std = np.sqrt(2.0 / (cout * 9))
        params[f"conv{i}.weight"] = (rng.standard_normal((cout, cin, 3, 3)) * std).astype(dtype)
        params[f"conv{i}.bias"] = np.zeros(cout, dtype)
    for j, (fan_in, fan_out) in enumerate(fc_sizes(config)):
        bound = 1.0 / np.sqrt(fan_in)
        params[f"fc{j}.weight"] = rng.uniform(-bound, bound, (fan_in, fan_out)).astype(dtype)
        params[f"fc{j}.bias"] = rng.uniform(-bound, bound, (fan_out,)).astype(dtype)
    return params


def build(builder, config: VGGConfig, params: Dict[str, np.ndarray], batch_size: int,
          train: bool = True) -> Dict[str, str]:
    """Declares inputs ``images`` [B, C, H, W] and ``labels`` [B] (int64),
    the variables and the forward.

    Returns the tensor names: ``data`` (images), ``labels``, ``logits`` [B,
    classes] and ``loss`` (scalar mean cross-entropy).
    """
    s = config.image_size
    x = builder.input("images", [batch_size, config.in_channels, s, s], dtype_name(params))
    labels = builder.input("labels", [batch_size], "int64")
    declare_variables(builder, params)
    seeds = DropoutSeeds(config.dropout_seed)
    h, conv, pool = x, 0, 0
    for item in config.features:
        if item == "M":
            h = builder.max_pool2d(h, kernel_size=[2, 2], stride=[2, 2], padding=[0, 0],
                                   name=f"pool{pool}")
            pool += 1
            continue
        p = f"conv{conv}"
        h = builder.conv2d(h, f"{p}.weight", stride=[1, 1], padding=[1, 1], dilation=[1, 1],
                           name=f"{p}/conv")
        h = builder.bias_add(h, f"{p}.bias", axis=1, name=f"{p}/bias_add")
        h = builder.relu(h, name=f"{p}/relu")
        conv += 1
    h = builder.flatten(h, start_dim=1, end_dim=-1, name="flatten")
    num_fc = len(fc_sizes(config))
    for j in range(num_fc):
        h = linear(builder, h, f"fc{j}")
        if j + 1 < num_fc:
            h = builder.relu(h, name=f"fc{j}/relu")
            if train:
                h = dropout(builder, h, config.dropout, seeds, f"fc{j}/dropout")
    loss = mean_cross_entropy(builder, h, labels)
    return {"data": x, "labels": labels, "logits": h, "loss": loss}
