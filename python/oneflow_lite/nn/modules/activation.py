"""Activations and ``nn.Dropout``. Not thread-safe."""
from __future__ import annotations

from typing import Optional

from oneflow_lite import _dispatch, _random
from oneflow_lite.nn import functional as F
from oneflow_lite.nn.module import Module


class ReLU(Module):
    def forward(self, x):
        return F.relu(x)


class GELU(Module):
    """Exact GELU."""

    def forward(self, x):
        return F.gelu(x)


class Tanh(Module):
    def forward(self, x):
        return F.tanh(x)


class Sigmoid(Module):
    def forward(self, x):
        return F.sigmoid(x)


class Softmax(Module):
    def __init__(self, dim: int = -1) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return F.softmax(x, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class Dropout(Module):
    """Active in train() only. The mask is the C++ kernel's Philox draw of
    (seed, iteration, element index): ``seed`` defaults to one drawn from
    the ``flow.manual_seed`` generator; the iteration counts this module's
    train-mode calls (one per training step), as a graph run's step does."""

    def __init__(self, p: float = 0.5, seed: Optional[int] = None) -> None:
        super().__init__()
        if not 0.0 <= p < 1.0:
            raise ValueError(f"Dropout: p={p} is outside [0, 1)")
        self.p = float(p)
        self.seed = _random.next_seed() if seed is None else int(seed)
        self.iteration = 0

    def forward(self, x):
        if not self.training or self.p == 0.0:
            return x
        return F.dropout(x, self.p, True, self.seed, self.next_iteration())

    def next_iteration(self) -> int:
        """The iteration of this call; counts eager calls only (a traced
        graph numbers its steps itself)."""
        it = self.iteration
        if _dispatch.active_tracer() is None:
            self.iteration += 1
        return it

    def extra_repr(self) -> str:
        return f"p={self.p}, seed={self.seed}"
