"""GPT-2 style decoder-only transformer (pre-LayerNorm) as an nn.Module.

``wte`` (Embedding V x D) plus ``wpe`` (Embedding T x D, added whole), then
``h``, a ModuleList of ``n_layer`` Blocks of

    x = x + drop(attn(ln1(x)))        causal multi-head self-attention (qkv, proj)
    x = x + drop(mlp(ln2(x)))         mlp: fc D -> 4D, GELU, proj 4D -> D

then ``ln_f`` and ``head`` (Linear D -> V, no bias). ``forward(ids [B, T])``
returns logits [B, T, V]; the loss is ``F.cross_entropy(logits, labels)``.
Init as GPT-2: weights N(0, 0.02), residual projections N(0, 0.02 /
sqrt(2 n_layer)), biases 0, LayerNorm 1 and 0. Dropout modules get seeds
dropout_seed, +1, ... in the order embed, then per block attention
probabilities, attention residual, MLP residual.

    >>> import oneflow_lite as flow
    >>> cfg = flow.models.GPTConfig(vocab_size=16, seq_len=8, n_layer=1, n_head=2, n_embd=8)
    >>> model = flow.models.GPT(cfg)
    >>> model(flow.zeros(2, 8, dtype=flow.int64)).shape
    (2, 8, 16)
    >>> "h.0.attn.qkv.weight" in model.state_dict()
    True
"""
from __future__ import annotations

import math

from oneflow_lite import nn
from oneflow_lite.models.config import GPTConfig
from oneflow_lite.nn import init

STD = 0.02


class MLPBlock(nn.Module):
    def __init__(self, d: int, proj_std: float, dtype=None) -> None:
        super().__init__()
        self.fc = nn.Linear(d, 4 * d, dtype=dtype)
        self.proj = nn.Linear(4 * d, d, dtype=dtype)
        init.normal_(self.fc.weight, 0.0, STD)
        init.normal_(self.proj.weight, 0.0, proj_std)
        init.zeros_(self.fc.bias)
        init.zeros_(self.proj.bias)

    def forward(self, x):
        return self.proj(nn.functional.gelu(self.fc(x)))


class Block(nn.Module):
    def __init__(self, config: GPTConfig, seed: int, dtype=None) -> None:
        super().__init__()
        d, eps = config.n_embd, config.layer_norm_epsilon
        proj_std = STD / math.sqrt(2 * config.n_layer)
        self.ln1 = nn.LayerNorm(d, eps, dtype=dtype)
        self.attn = nn.CausalSelfAttention(d, config.n_head, config.seq_len, config.dropout,
                                           seed, dtype=dtype)
        init.normal_(self.attn.qkv.weight, 0.0, STD)
        init.normal_(self.attn.proj.weight, 0.0, proj_std)
        init.zeros_(self.attn.qkv.bias)
        init.zeros_(self.attn.proj.bias)
        self.drop1 = nn.Dropout(config.dropout, seed + 1)
        self.ln2 = nn.LayerNorm(d, eps, dtype=dtype)
        self.mlp = MLPBlock(d, proj_std, dtype)
        self.drop2 = nn.Dropout(config.dropout, seed + 2)

    def forward(self, x):
        x = x + self.drop1(self.attn(self.ln1(x)))
        return x + self.drop2(self.mlp(self.ln2(x)))


class GPT(nn.Module):
    def __init__(self, config: GPTConfig = GPTConfig(), dtype=None) -> None:
        super().__init__()
        self.config = config
        d = config.n_embd
        self.wte = nn.Embedding(config.vocab_size, d, dtype=dtype)
        self.wpe = nn.Embedding(config.seq_len, d, dtype=dtype)
        init.normal_(self.wte.weight, 0.0, STD)
        init.normal_(self.wpe.weight, 0.0, STD)
        self.drop = nn.Dropout(config.dropout, config.dropout_seed)
        self.h = nn.ModuleList(Block(config, config.dropout_seed + 1 + 3 * i, dtype)
                               for i in range(config.n_layer))
        self.ln_f = nn.LayerNorm(d, config.layer_norm_epsilon, dtype=dtype)
        self.head = nn.Linear(d, config.vocab_size, bias=False, dtype=dtype)
        init.normal_(self.head.weight, 0.0, STD)

    def forward(self, ids):
        if ids.ndim != 2 or ids.shape[1] > self.config.seq_len:
            raise ValueError(f"ids shape {list(ids.shape)} is not [B, T <= "
                             f"{self.config.seq_len}]")
        t = ids.shape[1]
        pos = self.wpe.weight if t == self.config.seq_len else self.wpe.weight[:t]
        x = self.drop(self.wte(ids) + pos)
        for block in self.h:
            x = block(x)
        return self.head(self.ln_f(x))
