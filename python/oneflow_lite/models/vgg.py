"""VGG-style convolutional classifier on NCHW images.

``config.features`` lists the feature extractor: an int is a 3x3 conv with
padding 1 and that many output channels, + bias + ReLU; ``"M"`` is a 2x2 max
pool with stride 2. Then flatten, and per entry of ``config.fc`` a Linear +
ReLU (+ optional dropout), and a final Linear to ``num_classes`` logits. The
loss is the mean sparse softmax cross-entropy.

``vgg16_config()`` is torchvision's VGG16 layout (13 convs, FC 4096-4096) for
benchmarks; the small default config is for tests.

    >>> from oneflow_lite.graph_builder import GraphBuilder
    >>> from oneflow_lite.models import vgg
    >>> cfg = vgg.VGGConfig(features=(4, "M"), image_size=8, fc=(16,), num_classes=3)
    >>> params = vgg.init_params(cfg, seed=0)
    >>> b = GraphBuilder()
    >>> names = vgg.build(b, cfg, params, batch_size=2)
    >>> b.shape(names["logits"])
    [2, 3]
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Tuple, Union

import numpy as np

from oneflow_lite.models.common import (DropoutSeeds, as_dtype, declare_variables, dropout,
                                        dtype_name, linear, mean_cross_entropy)

VGG16_FEATURES = (64, 64, "M", 128, 128, "M", 256, 256, 256, "M",
                  512, 512, 512, "M", 512, 512, 512, "M")


@dataclass(frozen=True)
class VGGConfig:
    features: Tuple[Union[int, str], ...] = (8, "M", 16, "M")
    in_channels: int = 3
    image_size: int = 16           # square H = W; divisible by 2 ** (number of "M")
    fc: Tuple[int, ...] = (64,)    # hidden Linear + ReLU widths after flatten
    num_classes: int = 10
    dropout: float = 0.0           # after every hidden FC ReLU, train mode only
    dropout_seed: int = 1000       # first dropout op's seed; the next get +1, +2, ...

    def __post_init__(self) -> None:
        for item in self.features:
            if item != "M" and not (isinstance(item, int) and item > 0):
                raise ValueError(f"VGGConfig: features entry {item!r} is neither a positive "
                                 f"channel count nor 'M'")
        pools = sum(1 for item in self.features if item == "M")
        if self.image_size % (2 ** pools) != 0:
            raise ValueError(f"VGGConfig: image_size={self.image_size} is not divisible by "
                             f"2**{pools} (one halving per 'M')")


def vgg16_config(image_size: int = 224, num_classes: int = 1000) -> VGGConfig:
    """torchvision's VGG16 (configuration "D") without its adaptive pooling:
    at image_size 224 the flatten has 512*7*7 features, as in the paper."""
    return VGGConfig(features=VGG16_FEATURES, in_channels=3, image_size=image_size,
                     fc=(4096, 4096), num_classes=num_classes)


def conv_channels(config: VGGConfig) -> list:
    """(in, out) channels of every conv, in order."""
    out, channels = [], config.in_channels
    for item in config.features:
        if item != "M":
            out.append((channels, item))
            channels = item
    return out


def flat_features(config: VGGConfig) -> int:
    pools = sum(1 for item in config.features if item == "M")
    side = config.image_size // (2 ** pools)
    channels = conv_channels(config)[-1][1] if conv_channels(config) else config.in_channels
    return channels * side * side


def fc_sizes(config: VGGConfig) -> list:
    """(in, out) of every Linear, the logits layer last."""
    dims = [flat_features(config), *config.fc, config.num_classes]
    return list(zip(dims[:-1], dims[1:]))


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
