"""``nn.Conv2d`` (NCHW, weight [O, C, kh, kw]), ``nn.MaxPool2d``,
``nn.AvgPool2d`` and ``nn.Flatten``. Not thread-safe."""
from __future__ import annotations

import math

from oneflow_lite import _creation, _dtype
from oneflow_lite.nn import functional as F
from oneflow_lite.nn import init
from oneflow_lite.nn.module import Module
from oneflow_lite.nn.parameter import Parameter


class Conv2d(Module):
    """PyTorch's default init: weight and bias ~ U(-1/sqrt(fan_in), +)."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0,
                 dilation=1, bias: bool = True, dtype=None) -> None:
        super().__init__()
        k = F._pair(kernel_size, "Conv2d kernel_size")
        self.in_channels, self.out_channels, self.kernel_size = in_channels, out_channels, k
        self.stride, self.padding, self.dilation = stride, padding, dilation
        dtype = dtype or _dtype.float32
        bound = 1.0 / math.sqrt(in_channels * k[0] * k[1])
        self.weight = Parameter(init.uniform_(
            _creation.empty(out_channels, in_channels, *k, dtype=dtype), -bound, bound))
        if bias:
            self.bias = Parameter(init.uniform_(_creation.empty(out_channels, dtype=dtype),
                                                -bound, bound))
        else:
            self.register_parameter("bias", None)

    def forward(self, x):
        if x.ndim != 4 or x.shape[1] != self.in_channels:
            raise ValueError(f"input shape {list(x.shape)} is not [N, {self.in_channels}, H, W]")
        return F.conv2d(x, self.weight, self.bias, self.stride, self.padding, self.dilation)

    def extra_repr(self) -> str:
        return (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
                f"stride={self.stride}, padding={self.padding}")


class MaxPool2d(Module):
    def __init__(self, kernel_size, stride=None, padding=0) -> None:
        super().__init__()
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding

    def forward(self, x):
        return F.max_pool2d(x, self.kernel_size, self.stride, self.padding)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}"


class AvgPool2d(MaxPool2d):
    def forward(self, x):
        return F.avg_pool2d(x, self.kernel_size, self.stride, self.padding)


class Flatten(Module):
    def __init__(self, start_dim: int = 1, end_dim: int = -1) -> None:
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, x):
        return x.flatten(self.start_dim, self.end_dim)
