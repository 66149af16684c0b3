"""``nn.Linear`` (weight [out, in], PyTorch layout and default init) and
``nn.Identity``. Not thread-safe."""
from __future__ import annotations

import math

from oneflow_lite import _creation, _dtype
from oneflow_lite._tensor import check_shape
from oneflow_lite.nn import functional as F
from oneflow_lite.nn import init
from oneflow_lite.nn.module import Module
from oneflow_lite.nn.parameter import Parameter


class Linear(Module):
    """y = x @ weight.T + bias; weight and bias ~ U(-1/sqrt(in), 1/sqrt(in))."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True,
                 dtype=None) -> None:
        super().__init__()
        if in_features <= 0 or out_features <= 0:
            raise ValueError(f"Linear: in_features={in_features} and out_features="
                             f"{out_features} must be positive")
        self.in_features, self.out_features = in_features, out_features
        dtype = dtype or _dtype.float32
        check_shape((out_features, in_features), dtype,
                    f"Linear(in_features={in_features}, out_features={out_features}).weight")
        bound = 1.0 / math.sqrt(in_features)
        self.weight = Parameter(init.uniform_(_creation.empty(out_features, in_features,
                                                            dtype=dtype), -bound, bound))
        if bias:
            self.bias = Parameter(init.uniform_(_creation.empty(out_features, dtype=dtype),
                                                -bound, bound))
        else:
            self.register_parameter("bias", None)

    def forward(self, x):
        if x.ndim < 1 or x.shape[-1] != self.in_features:
            last = x.shape[-1] if x.ndim else None
            raise ValueError(f"input shape {list(x.shape)}: shape[-1]={last} "
                             f"!= in_features={self.in_features} (weight shape "
                             f"{list(self.weight.shape)})")
        return F.linear(x, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}")


class Identity(Module):
    def forward(self, x):
        return x
