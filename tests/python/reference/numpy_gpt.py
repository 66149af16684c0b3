"""numpy GPT-2 style pre-LayerNorm decoder: forward and hand-written backward.

Per block: x += proj(causal_attention(ln1(x))); x += fc2(gelu(fc1(ln2(x)))).
Embeddings wte [V, D] + wpe [T, D]; final LayerNorm; head [D, V] without
bias; mean cross-entropy over the B*T tokens. The causal mask adds -1e9 above
the diagonal. Parameter names and layouts are its own
(``h0.attn.qkv.weight`` [D, 3D]); reference/state_dict.py maps a
``flow.models.GPT`` state_dict onto them.

Config fields used: vocab_size, seq_len, n_layer, n_head, n_embd,
layer_norm_epsilon. Dropout is not modelled. A batch is ``(ids [B, T],
labels [B, T])``, both integer.
"""
from __future__ import annotations

import math

import numpy as np

from reference.common import (Products, cross_entropy, gelu_backward, gelu_forward,
                              layer_norm_backward, layer_norm_forward, linear, linear_grads,
                              softmax, softmax_backward)

MASK_VALUE = -1e9


def param_shapes(config) -> dict:
    d, v, t = config.n_embd, config.vocab_size, config.seq_len
    shapes = {"wte": (v, d), "wpe": (t, d)}
    for i in range(config.n_layer):
        p = f"h{i}"
        shapes.update({
            f"{p}.ln1.gamma": (d,), f"{p}.ln1.beta": (d,),
            f"{p}.attn.qkv.weight": (d, 3 * d), f"{p}.attn.qkv.bias": (3 * d,),
            f"{p}.attn.proj.weight": (d, d), f"{p}.attn.proj.bias": (d,),
            f"{p}.ln2.gamma": (d,), f"{p}.ln2.beta": (d,),
            f"{p}.mlp.fc.weight": (d, 4 * d), f"{p}.mlp.fc.bias": (4 * d,),
            f"{p}.mlp.proj.weight": (4 * d, d), f"{p}.mlp.proj.bias": (d,),
        })
    shapes.update({"ln_f.gamma": (d,), "ln_f.beta": (d,), "head.weight": (d, v)})
    return shapes


def random_params(config, rng: np.random.Generator, dtype=np.float64) -> dict:
    """Every entry random and non-zero (gammas around 1), for gradient checks."""
    params = {}
    for name, shape in param_shapes(config).items():
        value = rng.standard_normal(shape) * 0.3
        if name.endswith(".gamma"):
            value = 1.0 + value
        params[name] = value.astype(dtype)
    return params


def random_batch(config, batch_size: int, rng: np.random.Generator, dtype=None):
    shape = (batch_size, config.seq_len)
    ids = rng.integers(0, config.vocab_size, shape).astype(np.int64)
    labels = rng.integers(0, config.vocab_size, shape).astype(np.int64)
    return ids, labels


def _split_heads(x2d, b, t, h):
    """[B*T, D] -> [B, H, T, Dh]."""
    return x2d.reshape(b, t, h, -1).transpose(0, 2, 1, 3)


def _merge_heads(x4d):
    """[B, H, T, Dh] -> [B*T, D]."""
    b, h, t, dh = x4d.shape
    return x4d.transpose(0, 2, 1, 3).reshape(b * t, h * dh)


def _attention_forward(a, params, p, b, config):
    d, t, h = config.n_embd, config.seq_len, config.n_head
    qkv = linear(a, params[f"{p}.attn.qkv.weight"], params[f"{p}.attn.qkv.bias"])
    q, k, v = (_split_heads(qkv[:, j * d:(j + 1) * d], b, t, h) for j in range(3))
    scale = 1.0 / math.sqrt(d // h)
    mask = np.where(np.triu(np.ones((t, t), bool), k=1), MASK_VALUE, 0.0).astype(a.dtype)
    probs = softmax(Products.forward(q, k.transpose(0, 1, 3, 2)) * scale + mask, axis=-1)
    context = _merge_heads(Products.forward(probs, v))
    y = linear(context, params[f"{p}.attn.proj.weight"], params[f"{p}.attn.proj.bias"])
    return y, (a, q, k, v, probs, context, scale)


def _attention_backward(cache, dy, params, p, grads):
    a, q, k, v, probs, context, scale = cache
    dcontext, grads[f"{p}.attn.proj.weight"], grads[f"{p}.attn.proj.bias"] = linear_grads(
        context, params[f"{p}.attn.proj.weight"], dy)
    b, h, t, dh = q.shape
    do = dcontext.reshape(b, t, h, dh).transpose(0, 2, 1, 3)
    dprobs = Products.backward(do, v.transpose(0, 1, 3, 2))
    dv = Products.backward(probs.transpose(0, 1, 3, 2), do)
    dscores = softmax_backward(probs, dprobs, axis=-1) * scale
    dq = Products.backward(dscores, k)
    dk = Products.backward(dscores.transpose(0, 1, 3, 2), q)
    dqkv = np.concatenate([_merge_heads(g) for g in (dq, dk, dv)], axis=1)
    da, grads[f"{p}.attn.qkv.weight"], grads[f"{p}.attn.qkv.bias"] = linear_grads(
        a, params[f"{p}.attn.qkv.weight"], dqkv)
    return da


def _block_forward(x, params, p, b, config):
    eps = config.layer_norm_epsilon
    a, ln1 = layer_norm_forward(x, params[f"{p}.ln1.gamma"], params[f"{p}.ln1.beta"], eps)
    y, attn = _attention_forward(a, params, p, b, config)
    x = x + y
    c, ln2 = layer_norm_forward(x, params[f"{p}.ln2.gamma"], params[f"{p}.ln2.beta"], eps)
    f = linear(c, params[f"{p}.mlp.fc.weight"], params[f"{p}.mlp.fc.bias"])
    g, gelu = gelu_forward(f)
    z = linear(g, params[f"{p}.mlp.proj.weight"], params[f"{p}.mlp.proj.bias"])
    return x + z, (ln1, attn, ln2, c, gelu, g)


def _block_backward(cache, dx, params, p, grads):
    ln1, attn, ln2, c, gelu, g = cache
    dg, grads[f"{p}.mlp.proj.weight"], grads[f"{p}.mlp.proj.bias"] = linear_grads(
        g, params[f"{p}.mlp.proj.weight"], dx)
    df = gelu_backward(gelu, dg)
    dc, grads[f"{p}.mlp.fc.weight"], grads[f"{p}.mlp.fc.bias"] = linear_grads(
        c, params[f"{p}.mlp.fc.weight"], df)
    d_ln2, grads[f"{p}.ln2.gamma"], grads[f"{p}.ln2.beta"] = layer_norm_backward(ln2, dc)
    dx = dx + d_ln2
    da = _attention_backward(attn, dx, params, p, grads)
    d_ln1, grads[f"{p}.ln1.gamma"], grads[f"{p}.ln1.beta"] = layer_norm_backward(ln1, da)
    return dx + d_ln1


def _forward(params: dict, config, ids) -> tuple:
    """Returns (logits [B*T, V], caches)."""
    b, t = ids.shape
    if t != config.seq_len:
        raise ValueError(f"numpy_gpt: batch has T={t}, config.seq_len={config.seq_len}")
    x = (params["wte"][ids] + params["wpe"][None, :t]).reshape(b * t, config.n_embd)
    blocks = []
    for i in range(config.n_layer):
        x, cache = _block_forward(x, params, f"h{i}", b, config)
        blocks.append(cache)
    xf, lnf = layer_norm_forward(x, params["ln_f.gamma"], params["ln_f.beta"],
                                 config.layer_norm_epsilon)
    return Products.forward(xf, params["head.weight"]), (blocks, xf, lnf)


def logits(params: dict, config, ids) -> np.ndarray:
    """[B, T, V] next-token logits."""
    b, t = ids.shape
    return _forward(params, config, ids)[0].reshape(b, t, -1)


def loss_and_grads(params: dict, config, batch) -> tuple:
    """Returns (mean loss, {param name: gradient})."""
    ids, labels = batch
    b, t = ids.shape
    d = config.n_embd
    flat_logits, (blocks, xf, lnf) = _forward(params, config, ids)
    loss, dlogits = cross_entropy(flat_logits.reshape(b, t, -1), labels)
    dlogits = dlogits.reshape(b * t, -1)

    grads = {}
    dxf, grads["head.weight"], _ = linear_grads(xf, params["head.weight"], dlogits,
                                                has_bias=False)
    dx, grads["ln_f.gamma"], grads["ln_f.beta"] = layer_norm_backward(lnf, dxf)
    for i in reversed(range(config.n_layer)):
        dx = _block_backward(blocks[i], dx, params, f"h{i}", grads)
    dx = dx.reshape(b, t, d)
    grads["wpe"] = np.zeros_like(params["wpe"])
    grads["wpe"][:t] = dx.sum(axis=0)
    grads["wte"] = np.zeros_like(params["wte"])
    np.add.at(grads["wte"], ids.reshape(-1), dx.reshape(b * t, d))
    return loss, grads


def loss(params: dict, config, batch) -> float:
    return loss_and_grads(params, config, batch)[0]
