"""``nn.CausalSelfAttention``: GPT-2's multi-head self-attention with a
causal mask. Submodules ``qkv`` (Linear D -> 3D) and ``proj`` (Linear D
-> D); the additive mask [T, T] (0 on and below the diagonal, -1e9 above) is
a non-persistent buffer ``mask``. The 3D features of ``qkv`` are ordered
head by head, each head's q, k and v (Dh each) in turn, as Megatron-LM lays
out its fused projection: a contiguous split of them over p ranks (p
dividing the head count) gives each rank whole heads, so the planner can
split attention by heads ([B*T, 3D] S(1) -> [B, T, H, 3, Dh] S(2)).
Not thread-safe."""
from __future__ import annotations

from typing import Optional

import numpy as np

from oneflow_lite import _creation, _dtype
from oneflow_lite.nn import functional as F
from oneflow_lite.nn.module import Module
from oneflow_lite.nn.modules.activation import Dropout
from oneflow_lite.nn.modules.linear import Linear

MASK_VALUE = -1e9


def causal_mask(seq_len: int, dtype=np.float32) -> np.ndarray:
    """[T, T]: 0 where key <= query, MASK_VALUE above the diagonal."""
    upper = np.triu(np.ones((seq_len, seq_len), dtype=bool), k=1)
    return np.where(upper, MASK_VALUE, 0.0).astype(dtype)


class CausalSelfAttention(Module):
    """x [B, T, D] -> [B, T, D], T <= seq_len; D a multiple of n_head."""

    def __init__(self, n_embd: int, n_head: int, seq_len: int, dropout: float = 0.0,
                 dropout_seed: Optional[int] = None, dtype=None) -> None:
        super().__init__()
        if n_embd % n_head != 0:
            raise ValueError(f"CausalSelfAttention: n_embd={n_embd} is not a multiple of "
                             f"n_head={n_head}")
        self.n_embd, self.n_head, self.seq_len = n_embd, n_head, seq_len
        self.qkv = Linear(n_embd, 3 * n_embd, dtype=dtype)
        self.proj = Linear(n_embd, n_embd, dtype=dtype)
        self.attn_dropout = Dropout(dropout, dropout_seed)
        dtype = dtype or _dtype.float32
        mask = _creation.empty(seq_len, seq_len, dtype=dtype)
        if mask._value is not None:
            mask._value[...] = causal_mask(seq_len, mask._value.dtype)
        self.register_buffer("mask", mask, persistent=False)

    def _heads(self, qkv5d, which: int):
        """q (0), k (1) or v (2) of qkv [B, T, H, 3, Dh] as [B, H, T, Dh]."""
        return qkv5d[:, :, :, which].permute(0, 2, 1, 3)

    def forward(self, x):
        if x.ndim != 3 or x.shape[2] != self.n_embd or x.shape[1] > self.seq_len:
            raise ValueError(f"input shape {list(x.shape)} is not [B, T <= {self.seq_len}, "
                             f"{self.n_embd}]")
        b, t, d = x.shape
        h = self.n_head
        qkv = self.qkv(x.reshape(b * t, d)).reshape(b, t, h, 3, d // h)
        q, k, v = (self._heads(qkv, i) for i in range(3))
        mask = self.mask if t == self.seq_len else self.mask[:t, :t]
        drop = self.attn_dropout
        active = drop.training and drop.p > 0
        y = F.scaled_dot_product_attention(q, k, v, mask, drop.p, active, drop.seed,
                                           drop.next_iteration() if active else 0)
        y = y.permute(0, 2, 1, 3).reshape(b * t, d)
        return self.proj(y).reshape(b, t, d)

    def extra_repr(self) -> str:
        return f"n_embd={self.n_embd}, n_head={self.n_head}, seq_len={self.seq_len}"
