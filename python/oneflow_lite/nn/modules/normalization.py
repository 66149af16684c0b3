"""``nn.LayerNorm`` (weight 1, bias 0) and ``nn.Embedding`` (weight N(0, 1),
as PyTorch). Not thread-safe."""
from __future__ import annotations

from oneflow_lite import _creation, _dtype
from oneflow_lite._tensor import check_shape
from oneflow_lite.nn import functional as F
from oneflow_lite.nn import init
from oneflow_lite.nn.module import Module
from oneflow_lite.nn.parameter import Parameter


class LayerNorm(Module):
    def __init__(self, normalized_shape, eps: float = 1e-5, dtype=None) -> None:
        super().__init__()
        shape = [normalized_shape] if isinstance(normalized_shape, int) else list(normalized_shape)
        self.normalized_shape, self.eps = shape, float(eps)
        dtype = dtype or _dtype.float32
        self.weight = Parameter(init.ones_(_creation.empty(*shape, dtype=dtype)))
        self.bias = Parameter(init.zeros_(_creation.empty(*shape, dtype=dtype)))

    def forward(self, x):
        return F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return f"{self.normalized_shape}, eps={self.eps}"


class Embedding(Module):
    def __init__(self, num_embeddings: int, embedding_dim: int, dtype=None) -> None:
        super().__init__()
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        dtype = dtype or _dtype.float32
        check_shape((num_embeddings, embedding_dim), dtype,
                    f"Embedding(num_embeddings={num_embeddings}, embedding_dim={embedding_dim})"
                    f".weight")
        self.weight = Parameter(init.normal_(_creation.empty(num_embeddings, embedding_dim,
                                                           dtype=dtype)))

    def forward(self, ids):
        if ids.dtype.is_floating_point:
            raise TypeError(f"ids must be integer, got dtype {ids.dtype.name}")
        return F.embedding(ids, self.weight)

    def extra_repr(self) -> str:
        return f"{self.num_embeddings}, {self.embedding_dim}"
