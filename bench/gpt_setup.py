"""gpt_setup: what every side of bench/ops_gpt.py shares, with numpy only
(the PyTorch peer imports it without importing oneflow_lite): the GPT's
configuration, batch, AdamW hyper-parameters, seed, the batches, and the
closed-form FLOP count of one training step.
"""
from __future__ import annotations

from typing import Dict, Iterator, Tuple

import numpy as np

CONFIG = dict(n_layer=4, n_embd=256, n_head=4, seq_len=128, vocab_size=2048)
LAYER_NORM_EPS = 1e-5  # GPTConfig's default; ops_gpt.py checks they agree
BATCH = 8
HYPER = dict(lr=1e-3, weight_decay=0.01)
SEED = 0


def batches(n: int, seed: int = 0) -> Iterator[Tuple[np.ndarray, np.ndarray]]:
    """n (ids, labels) pairs, [BATCH, seq_len] int64; labels are ids shifted by one."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        ids = rng.integers(0, CONFIG["vocab_size"], size=(BATCH, CONFIG["seq_len"]),
                           dtype=np.int64)
        out.append((ids, np.roll(ids, -1, axis=1)))
    return iter(out)


def step_flops(cfg: Dict[str, int] = CONFIG, batch: int = BATCH) -> Dict[str, int]:
    """Matmul FLOPs (2 m n k per product) of one training step of the GPT.

    N = batch * seq_len tokens, D = n_embd, V = vocab_size, T = seq_len.
    Forward, per layer: qkv 2 N D (3D), attention proj 2 N D D, mlp fc
    2 N D (4D), mlp proj 2 N (4D) D, i.e. 24 N D^2; attention scores Q K^T
    2 B H T T (D/H) = 2 B T^2 D and probabilities x V the same, 4 B T^2 D
    (the whole T x T square: the causal mask is added, not skipped). Head:
    2 N D V. Backward: every product needs the gradient of both operands
    (weights and activations, or both activations in attention), two
    products of the same size each: 2x forward. Step = 3x forward.
    Embedding look-ups, layer norms, softmax, GELU, the loss and AdamW are
    not matmuls and are not counted (they are O(N D) or O(params)).
    """
    n = batch * cfg["seq_len"]
    d, t, v, layers = cfg["n_embd"], cfg["seq_len"], cfg["vocab_size"], cfg["n_layer"]
    linear = 24 * n * d * d
    attention = 4 * batch * t * t * d
    head = 2 * n * d * v
    forward = layers * (linear + attention) + head
    return {"forward": forward, "backward": 2 * forward, "step": 3 * forward,
            "per_layer_linear": linear, "per_layer_attention": attention, "head": head}
