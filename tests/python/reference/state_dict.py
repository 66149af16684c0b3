"""Maps a flow.models state_dict onto the references' parameter names.

The references keep the GraphBuilder-era names and layout: Linear weights
[in, out] (``fc0.weight``, ``h0.attn.qkv.weight``), LayerNorm ``gamma`` and
``beta``, embeddings ``wte``/``wpe``, VGG convs ``conv{i}`` and Linears
``fc{j}`` numbered in order. The Modules use PyTorch's names and layout
(``h.0.attn.qkv.weight`` [out, in], LayerNorm ``weight``/``bias``, VGG
``features.<i>``/``classifier.<j>``). Works on key names and arrays only
(anything with ``.numpy()`` or an array); never imports oneflow_lite.
Pure functions; thread-safe.
"""
from __future__ import annotations

import re
from typing import Dict, Iterable, Mapping, Tuple

import numpy as np


def reference_names(model: str, keys: Iterable[str]) -> Dict[str, Tuple[str, bool]]:
    """state_dict key -> (reference name, transposed?) for model "mlp",
    "gpt" or "vgg"."""
    keys = list(keys)
    out = {}
    if model == "vgg":
        count = {"features": 0, "classifier": 0}
        seen = {}
        for key in keys:
            part, index, leaf = key.split(".")
            if (part, index) not in seen:
                seen[(part, index)] = count[part]
                count[part] += 1
            n = seen[(part, index)]
            prefix = "conv" if part == "features" else "fc"
            out[key] = (f"{prefix}{n}.{leaf}", part == "classifier" and leaf == "weight")
        return out
    if model not in ("mlp", "gpt"):
        raise ValueError(f"reference_names: unknown model '{model}'")
    for key in keys:
        ref = re.sub(r"^h\.(\d+)\.", r"h\1.", key)
        if key in ("wte.weight", "wpe.weight"):
            out[key] = (key.split(".")[0], False)
        elif re.search(r"(^|\.)ln(1|2|_f)\.", key):
            out[key] = (ref.replace(".weight", ".gamma").replace(".bias", ".beta"), False)
        else:
            out[key] = (ref, ref.endswith(".weight"))
    return out


def qkv_to_thirds(value: np.ndarray, n_head: int) -> np.ndarray:
    """GPT's fused qkv output features, in the Module's order (head, then
    q/k/v, then the head's dims: a contiguous split of them is head-aligned,
    which Megatron's attention split needs), reordered to the references'
    (q, k, v by thirds, each head by head). Works on a bias [3D] or on a
    transposed weight [in, 3D] (the last axis is the feature axis)."""
    three_d = value.shape[-1]
    d = three_d // 3
    lead = value.shape[:-1]
    heads = value.reshape(*lead, n_head, 3, d // n_head)
    return np.ascontiguousarray(np.moveaxis(heads, -2, -3).reshape(*lead, three_d))


def from_state_dict(model: str, state: Mapping, dtype=np.float64,
                    config=None) -> Dict[str, np.ndarray]:
    """The references' params dict (reference name -> array in ``dtype``, or
    in its own dtype when ``dtype`` is None; weights transposed where the
    reference wants [in, out]; GPT's qkv reordered by ``qkv_to_thirds``,
    which needs ``config.n_head``)."""
    out = {}
    for key, (ref, transposed) in reference_names(model, state.keys()).items():
        value = state[key]
        value = np.asarray(value.numpy() if hasattr(value, "numpy") else value)
        value = np.ascontiguousarray(value.T if transposed else value)
        if model == "gpt" and re.search(r"\.attn\.qkv\.(weight|bias)$", key):
            if config is None:
                raise ValueError("from_state_dict: GPT's qkv needs config (its n_head)")
            value = qkv_to_thirds(value, config.n_head)
        out[ref] = value if dtype is None else value.astype(dtype)
    return out
