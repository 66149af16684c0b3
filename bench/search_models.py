"""The model graphs of ``bench/run.sh search`` and ``bench/run.sh paper``.

ONE function, ``build_program``, turns a model name and its sizes into a
``_C.Program`` holding the forward, the backward and the Adam updates, with
declared-only variables (a shape and a dtype, no values): a 96-layer GPT has
about 19 G parameters, far too many to allocate for a search. It builds the
graphs with the GraphBuilder builders of ``oneflow_lite.models.legacy``
(gpt, mlp, vgg): tracing the ``flow.models`` Modules (``models.trace_loss``)
would first allocate every parameter. When tracing can declare parameters
without values, only this file changes.

    >>> program, names = build_program("mlp", layers=2, batch=4, hidden=8)
    >>> program.num_ops() > 0
    True
"""
from __future__ import annotations

from typing import Dict, Tuple

import numpy as np

from oneflow_lite import _C
from oneflow_lite.graph_builder import GraphBuilder
from oneflow_lite.models.legacy import gpt, mlp, vgg


class _DeclaringBuilder(GraphBuilder):
    """A GraphBuilder whose variables are declared only: shape and dtype."""

    def variable(self, name: str, init: np.ndarray, trainable: bool = True) -> str:
        self.program.add_variable_desc(name, list(init.shape), np.dtype(init.dtype).name,
                                       trainable)
        return name


def _placeholder(shape, dtype=np.float32) -> np.ndarray:
    """A read-only array of that shape and dtype that owns one element."""
    return np.broadcast_to(np.zeros((), dtype), tuple(shape))


def _gpt_shapes(cfg: gpt.GPTConfig) -> Dict[str, np.ndarray]:
    d, v, t = cfg.n_embd, cfg.vocab_size, cfg.seq_len
    shapes = {"wte": (v, d), "wpe": (t, d)}
    for i in range(cfg.n_layer):
        p = f"h{i}"
        shapes.update({f"{p}.ln1.gamma": (d,), f"{p}.ln1.beta": (d,),
                       f"{p}.attn.qkv.weight": (d, 3 * d), f"{p}.attn.qkv.bias": (3 * d,),
                       f"{p}.attn.proj.weight": (d, d), f"{p}.attn.proj.bias": (d,),
                       f"{p}.ln2.gamma": (d,), f"{p}.ln2.beta": (d,),
                       f"{p}.mlp.fc.weight": (d, 4 * d), f"{p}.mlp.fc.bias": (4 * d,),
                       f"{p}.mlp.proj.weight": (4 * d, d), f"{p}.mlp.proj.bias": (d,)})
    shapes.update({"ln_f.gamma": (d,), "ln_f.beta": (d,), "head.weight": (d, v)})
    return {name: _placeholder(shape) for name, shape in shapes.items()}


def _mlp_shapes(cfg: mlp.MLPConfig) -> Dict[str, np.ndarray]:
    out = {}
    for i, (fan_in, fan_out) in enumerate(mlp.layer_sizes(cfg)):
        out[f"fc{i}.weight"] = _placeholder((fan_in, fan_out))
        out[f"fc{i}.bias"] = _placeholder((fan_out,))
    return out


def _vgg_shapes(cfg: vgg.VGGConfig) -> Dict[str, np.ndarray]:
    out = {}
    for i, (cin, cout) in enumerate(vgg.conv_channels(cfg)):
        out[f"conv{i}.weight"] = _placeholder((cout, cin, 3, 3))
        out[f"conv{i}.bias"] = _placeholder((cout,))
    for j, (fan_in, fan_out) in enumerate(vgg.fc_sizes(cfg)):
        out[f"fc{j}.weight"] = _placeholder((fan_in, fan_out))
        out[f"fc{j}.bias"] = _placeholder((fan_out,))
    return out


def build_program(model: str, layers: int, batch: int, hidden: int = 4096, heads: int = 32,
                  seq: int = 2048, vocab: int = 51200, image_size: int = 224,
                  num_classes: int = 1000) -> Tuple["_C.Program", Dict[str, str]]:
    """A training graph (forward, backward, Adam) with declared-only variables.

    model: ``gpt`` (``layers`` decoder blocks of width ``hidden``, ``heads``
    heads, context ``seq``, vocabulary ``vocab``; ``batch`` sequences),
    ``mlp`` (``layers`` Linear layers of width ``hidden``, the first taking
    ``hidden`` features and the last giving ``hidden`` logits; ``batch``
    rows) or ``vgg16`` (torchvision's VGG16 on ``image_size`` images,
    ``num_classes`` classes, ``batch`` images; ``layers`` is ignored).
    ``batch`` is what one step (one micro-batch) computes on.
    Returns the program and the model's tensor names (data, labels, loss).
    """
    b = _DeclaringBuilder()
    if model == "gpt":
        cfg = gpt.GPTConfig(vocab_size=vocab, seq_len=seq, n_layer=layers, n_head=heads,
                            n_embd=hidden)
        names = gpt.build(b, cfg, _gpt_shapes(cfg), batch_size=batch)
    elif model == "mlp":
        if layers < 1:
            raise ValueError(f"build_program: mlp needs layers >= 1, got {layers}")
        cfg = mlp.MLPConfig(in_features=hidden, hidden=(hidden,) * (layers - 1),
                            num_classes=hidden)
        names = mlp.build(b, cfg, _mlp_shapes(cfg), batch_size=batch)
    elif model == "vgg16":
        cfg = vgg.vgg16_config(image_size=image_size, num_classes=num_classes)
        names = vgg.build(b, cfg, _vgg_shapes(cfg), batch_size=batch)
    else:
        raise ValueError(f"build_program: unknown model '{model}' (gpt, mlp, vgg16)")
    b.minimize(names["loss"], "adam", lr=1e-4)
    return b.program, names
