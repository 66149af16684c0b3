"""``nn.BatchNorm1d`` and ``nn.BatchNorm2d``, as PyTorch's.

Training: each channel (axis 1) is normalised by the batch's mean and
biased variance over every other axis, then scaled by ``weight`` (1) and
shifted by ``bias`` (0); the running statistics move towards the batch's
(``running = (1 - momentum) * running + momentum * batch``, with the
unbiased variance; ``momentum=None``: the cumulative average over
``num_batches_tracked``). Eval (or ``track_running_stats=False`` never
having any): the running statistics normalise instead.

The forward composes registered ops (reduce_mean, sub, mul, scalar_pow,
...), so autograd and nn.Graph see them. The running statistics are
buffers updated in place after an eager training forward; inside nn.Graph
a training forward normalises by the batch but does not update them (the
graph has no assignment op), so train eagerly or in eval mode when the
running statistics matter there. Not thread-safe.
"""
from __future__ import annotations

from typing import Optional

from oneflow_lite import _autograd, _creation
from oneflow_lite import _dtype as dtypes
from oneflow_lite.nn import init
from oneflow_lite.nn.module import Module
from oneflow_lite.nn.parameter import Parameter


class _BatchNorm(Module):
    _NDIMS: tuple = ()  # the input ranks accepted

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: Optional[float] = 0.1,
                 affine: bool = True, track_running_stats: bool = True, dtype=None) -> None:
        super().__init__()
        if not isinstance(num_features, int) or num_features <= 0:
            raise ValueError(f"{type(self).__name__}: num_features must be a positive int, got "
                             f"{num_features!r}")
        if momentum is not None and not 0.0 <= momentum <= 1.0:
            raise ValueError(f"{type(self).__name__}: momentum={momentum} is outside [0, 1]")
        self.num_features, self.eps, self.momentum = num_features, float(eps), momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        dtype = dtype or dtypes.float32
        if affine:
            self.weight = Parameter(init.ones_(_creation.empty(num_features, dtype=dtype)))
            self.bias = Parameter(init.zeros_(_creation.empty(num_features, dtype=dtype)))
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if track_running_stats:
            self.register_buffer("running_mean", _creation.zeros(num_features, dtype=dtype))
            self.register_buffer("running_var", _creation.ones(num_features, dtype=dtype))
            self.register_buffer("num_batches_tracked", _creation.zeros((), dtype=dtypes.int64))
        else:
            for name in ("running_mean", "running_var", "num_batches_tracked"):
                self.register_buffer(name, None)

    def reset_running_stats(self) -> None:
        if self.track_running_stats:
            init.zeros_(self.running_mean)
            init.ones_(self.running_var)
            init.zeros_(self.num_batches_tracked)

    def _check(self, x) -> None:
        if x.ndim not in self._NDIMS or x.shape[1] != self.num_features:
            want = " or ".join(f"{n}-d" for n in self._NDIMS)
            raise ValueError(f"{type(self).__name__}({self.num_features}): expects a {want} "
                             f"input with {self.num_features} channels at axis 1, got shape "
                             f"{list(x.shape)}")

    def forward(self, x):
        self._check(x)
        axes = [0] + list(range(2, x.ndim))
        per_channel = [1, self.num_features] + [1] * (x.ndim - 2)
        use_batch = self.training or not self.track_running_stats
        if use_batch:
            count = x.numel() // self.num_features
            if count <= 1:
                raise ValueError(f"{type(self).__name__}: expected more than 1 value per "
                                 f"channel when training, got input shape {list(x.shape)}")
            mean = x.mean(axes, keepdim=True)
            centred = x - mean
            var = (centred * centred).mean(axes, keepdim=True)
            if self.training and self.track_running_stats and x._value is not None:
                self._update_running(mean, var, count)
        else:
            centred = x - self.running_mean.reshape(per_channel)
            var = self.running_var.reshape(per_channel)
        y = centred * (var + self.eps) ** -0.5
        if self.affine:
            y = y * self.weight.reshape(per_channel) + self.bias.reshape(per_channel)
        return y

    def _update_running(self, mean, var, count: int) -> None:
        """Eager: the buffers move towards the batch's statistics (in place)."""
        self.num_batches_tracked.fill_(int(self.num_batches_tracked.item()) + 1)
        m = self.momentum
        if m is None:
            m = 1.0 / float(self.num_batches_tracked.item())
        with _autograd.no_grad():
            unbiased = var.reshape(-1) * (count / (count - 1))
            new_mean = self.running_mean * (1 - m) + mean.detach().reshape(-1) * m
            new_var = self.running_var * (1 - m) + unbiased.detach() * m
            self.running_mean.copy_(new_mean)
            self.running_var.copy_(new_var)

    def extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
                f"affine={self.affine}, track_running_stats={self.track_running_stats}")


class BatchNorm1d(_BatchNorm):
    """Over [N, C] or [N, C, L]."""

    _NDIMS = (2, 3)


class BatchNorm2d(_BatchNorm):
    """Over [N, C, H, W]."""

    _NDIMS = (4,)
