"""GPT-2 style decoder-only transformer (pre-LayerNorm), for language modelling.

Token embedding ``wte`` [V, D] plus position embedding ``wpe`` [T, D], then
``n_layer`` blocks of

    x = x + proj(attention(ln1(x)))      causal multi-head self-attention
    x = x + fc2(gelu(fc1(ln2(x))))       MLP, D -> 4D -> D

then a final LayerNorm and a head Linear [D, V] without bias. The loss is the
mean cross-entropy over all B*T tokens. Activations are kept 2-D [B*T, D]
between blocks so every Linear is one 2-D matmul; attention reshapes to
[B, H, T, Dh]. The causal mask is a non-trainable [T, T] variable with 0 on
and below the diagonal and -1e9 above, added to the scores.

    >>> from oneflow_lite.graph_builder import GraphBuilder
    >>> from oneflow_lite.models.legacy import gpt
    >>> cfg = gpt.GPTConfig(vocab_size=16, seq_len=8, n_layer=1, n_head=2, n_embd=8)
    >>> params = gpt.init_params(cfg, seed=0)
    >>> b = GraphBuilder()
    >>> names = gpt.build(b, cfg, params, batch_size=2)
    >>> b.shape(names["logits"])
    [2, 8, 16]
"""
from __future__ import annotations

import math
from typing import Dict

import numpy as np

from oneflow_lite.models.config import GPTConfig
from oneflow_lite.models.legacy.common import (DropoutSeeds, as_dtype, declare_variables,
                                               dropout,
                                        linear, mean_cross_entropy)

MASK_VALUE = -1e9
CAUSAL_MASK = "causal_mask"


def causal_mask(seq_len: int, dtype=np.float32) -> np.ndarray:
    """[T, T]: 0 where key <= query (on and below the diagonal), -1e9 above."""
    upper = np.triu(np.ones((seq_len, seq_len), dtype=bool), k=1)
    return np.where(upper, MASK_VALUE, 0.0).astype(dtype)


def init_params(config: GPTConfig, seed: int, dtype=np.float32) -> Dict[str, np.ndarray]:
    """GPT-2 init: weights ~ N(0, 0.02), residual projections ~ N(0, 0.02 /
    sqrt(2 * n_layer)), biases 0, LayerNorm gamma 1 and beta 0.

    Names: ``wte``, ``wpe``; per block i ``h{i}.ln1.{gamma,beta}``,
    ``h{i}.attn.qkv.{weight,bias}`` ([D, 3D]: q, k, v by column thirds),
    ``h{i}.attn.proj.{weight,bias}``, ``h{i}.ln2.*``, ``h{i}.mlp.fc.*``
    ([D, 4D]), ``h{i}.mlp.proj.*`` ([4D, D]); ``ln_f.{gamma,beta}``,
    ``head.weight`` [D, V].
    """
    dtype = as_dtype(dtype)
    rng = np.random.default_rng(seed)
    d, v, t = config.n_embd, config.vocab_size, config.seq_len
    std = 0.02
    proj_std = std / math.sqrt(2 * config.n_layer)

    def normal(shape, scale):
        return (rng.standard_normal(shape) * scale).astype(dtype)

    def zeros(shape):
        return np.zeros(shape, dtype)

    params = {"wte": normal((v, d), std), "wpe": normal((t, d), std)}
    for i in range(config.n_layer):
        p = f"h{i}"
        params[f"{p}.ln1.gamma"] = np.ones(d, dtype)
        params[f"{p}.ln1.beta"] = zeros(d)
        params[f"{p}.attn.qkv.weight"] = normal((d, 3 * d), std)
        params[f"{p}.attn.qkv.bias"] = zeros(3 * d)
        params[f"{p}.attn.proj.weight"] = normal((d, d), proj_std)
        params[f"{p}.attn.proj.bias"] = zeros(d)
        params[f"{p}.ln2.gamma"] = np.ones(d, dtype)
        params[f"{p}.ln2.beta"] = zeros(d)
        params[f"{p}.mlp.fc.weight"] = normal((d, 4 * d), std)
        params[f"{p}.mlp.fc.bias"] = zeros(4 * d)
        params[f"{p}.mlp.proj.weight"] = normal((4 * d, d), proj_std)
        params[f"{p}.mlp.proj.bias"] = zeros(d)
    params["ln_f.gamma"] = np.ones(d, dtype)
    params["ln_f.beta"] = zeros(d)
    params["head.weight"] = normal((d, v), std)
    return params


def _layer_norm(builder, x: str, prefix: str, config: GPTConfig) -> str:
    y, _mean, _inv_std = builder.layer_norm(x, f"{prefix}.gamma", f"{prefix}.beta",
                                            begin_norm_axis=-1,
                                            epsilon=float(config.layer_norm_epsilon),
                                            name=prefix)
    return y


def _heads(builder, x2d: str, column: int, b: int, config: GPTConfig, name: str) -> str:
    """Columns [column*D, (column+1)*D) of qkv [B*T, 3D] as [B, H, T, Dh]."""
    d, t, h = config.n_embd, config.seq_len, config.n_head
    part = builder.slice(x2d, start=[0, column * d], stop=[b * t, (column + 1) * d],
                         step=[1, 1], name=f"{name}/slice")
    part = builder.reshape(part, shape=[b, t, h, d // h], name=f"{name}/reshape")
    return builder.transpose(part, perm=[0, 2, 1, 3], name=f"{name}/transpose")


def _attention(builder, x: str, prefix: str, b: int, config: GPTConfig, train: bool,
               seeds: DropoutSeeds) -> str:
    """Causal multi-head self-attention of x [B*T, D]; returns [B*T, D]."""
    d, t = config.n_embd, config.seq_len
    head_dim = d // config.n_head
    qkv = linear(builder, x, f"{prefix}.qkv")
    q = _heads(builder, qkv, 0, b, config, f"{prefix}/q")
    k = _heads(builder, qkv, 1, b, config, f"{prefix}/k")
    v = _heads(builder, qkv, 2, b, config, f"{prefix}/v")
    scores = builder.batch_matmul(q, k, transpose_a=False, transpose_b=True,
                                  name=f"{prefix}/scores")
    scores = builder.scalar_mul(scores, value=1.0 / math.sqrt(head_dim), name=f"{prefix}/scale")
    scores = builder.add(scores, CAUSAL_MASK, name=f"{prefix}/mask")
    probs = builder.softmax(scores, axis=-1, name=f"{prefix}/softmax")
    if train:
        probs = dropout(builder, probs, config.dropout, seeds, f"{prefix}/attn_dropout")
    y = builder.batch_matmul(probs, v, transpose_a=False, transpose_b=False,
                             name=f"{prefix}/context")
    y = builder.transpose(y, perm=[0, 2, 1, 3], name=f"{prefix}/merge/transpose")
    y = builder.reshape(y, shape=[b * t, d], name=f"{prefix}/merge/reshape")
    return linear(builder, y, f"{prefix}.proj")


def _block(builder, x: str, i: int, b: int, config: GPTConfig, train: bool,
           seeds: DropoutSeeds) -> str:
    p = f"h{i}"
    a = _layer_norm(builder, x, f"{p}.ln1", config)
    a = _attention(builder, a, f"{p}.attn", b, config, train, seeds)
    if train:
        a = dropout(builder, a, config.dropout, seeds, f"{p}.attn/resid_dropout")
    x = builder.add(x, a, name=f"{p}/residual1")
    m = _layer_norm(builder, x, f"{p}.ln2", config)
    m = linear(builder, m, f"{p}.mlp.fc")
    m = builder.gelu(m, name=f"{p}.mlp/gelu")
    m = linear(builder, m, f"{p}.mlp.proj")
    if train:
        m = dropout(builder, m, config.dropout, seeds, f"{p}.mlp/resid_dropout")
    return builder.add(x, m, name=f"{p}/residual2")


def build(builder, config: GPTConfig, params: Dict[str, np.ndarray], batch_size: int,
          train: bool = True) -> Dict[str, str]:
    """Declares inputs ``ids`` and ``labels`` (both [B, T] int64), the
    variables (plus the non-trainable ``causal_mask``) and the forward.

    Returns the tensor names: ``data`` (ids), ``labels``, ``logits`` [B, T,
    V] and ``loss`` (scalar mean cross-entropy over the B*T tokens).
    """
    b, t, d = batch_size, config.seq_len, config.n_embd
    ids = builder.input("ids", [b, t], "int64")
    labels = builder.input("labels", [b, t], "int64")
    declare_variables(builder, params)
    builder.variable(CAUSAL_MASK, causal_mask(t, params["wte"].dtype), trainable=False)
    seeds = DropoutSeeds(config.dropout_seed)

    x = builder.embedding("wte", ids, name="wte/lookup")                 # [B, T, D]
    x = builder.add(x, "wpe", name="wpe/add")                            # + [T, D]
    x = builder.reshape(x, shape=[b * t, d], name="embed/reshape")
    if train:
        x = dropout(builder, x, config.dropout, seeds, "embed/dropout")
    for i in range(config.n_layer):
        x = _block(builder, x, i, b, config, train, seeds)
    x = _layer_norm(builder, x, "ln_f", config)
    logits = linear(builder, x, "head", bias=False)               # [B*T, V]
    logits = builder.reshape(logits, shape=[b, t, config.vocab_size], name="logits")
    loss = mean_cross_entropy(builder, logits, labels)
    return {"data": ids, "labels": labels, "logits": logits, "loss": loss}
