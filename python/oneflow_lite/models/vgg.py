"""VGG-style convolutional classifier on NCHW images, as an nn.Module.

``features``: a Sequential of Conv2d(3x3, padding 1) + ReLU per int entry of
``config.features`` and MaxPool2d(2, 2) per "M"; then flatten; then
``classifier``: a Sequential of Linear + ReLU (+ Dropout) per ``config.fc``
entry and a last Linear to the logits. Init as torchvision: convs Kaiming
normal (fan_out, ReLU) with bias 0, Linears PyTorch's default.
``VGG16``/``VGG19`` build torchvision's layouts (``image_size`` and
``num_classes`` scale them down).

    >>> import oneflow_lite as flow
    >>> cfg = flow.models.VGGConfig(features=(4, "M"), image_size=8, fc=(16,), num_classes=3)
    >>> flow.models.VGG(cfg)(flow.randn(2, 3, 8, 8)).shape
    (2, 3)
"""
from __future__ import annotations

from oneflow_lite import nn
from oneflow_lite.models.config import (VGGConfig, conv_channels, fc_sizes,  # noqa: F401
                                        vgg16_config, vgg19_config)
from oneflow_lite.nn import init


class VGG(nn.Module):
    def __init__(self, config: VGGConfig = VGGConfig(), dtype=None) -> None:
        super().__init__()
        self.config = config
        layers, channels = [], config.in_channels
        for item in config.features:
            if item == "M":
                layers.append(nn.MaxPool2d(2, 2))
                continue
            conv = nn.Conv2d(channels, item, 3, padding=1, dtype=dtype)
            init.kaiming_normal_(conv.weight, mode="fan_out", nonlinearity="relu")
            init.zeros_(conv.bias)
            layers += [conv, nn.ReLU()]
            channels = item
        self.features = nn.Sequential(*layers)
        sizes = fc_sizes(config)
        head = []
        for j, (fan_in, fan_out) in enumerate(sizes):
            head.append(nn.Linear(fan_in, fan_out, dtype=dtype))
            if j + 1 < len(sizes):
                head.append(nn.ReLU())
                if config.dropout > 0:
                    head.append(nn.Dropout(config.dropout, config.dropout_seed + j))
        self.classifier = nn.Sequential(*head)

    def forward(self, images):
        return self.classifier(self.features(images).flatten(1))


def VGG16(image_size: int = 224, num_classes: int = 1000, dtype=None) -> VGG:  # noqa: N802
    return VGG(vgg16_config(image_size, num_classes), dtype)


def VGG19(image_size: int = 224, num_classes: int = 1000, dtype=None) -> VGG:  # noqa: N802
    return VGG(vgg19_config(image_size, num_classes), dtype)
