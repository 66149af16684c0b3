"""The model graphs of ``bench/run.sh search`` and ``bench/run.sh paper``.

ONE function, ``build_program``, turns a model name and its sizes into a
``_C.Program`` holding the forward, the backward and the Adam updates, with
declared-only variables (a shape and a dtype, no values): a 96-layer GPT has
about 19 G parameters, far too many to allocate for a search. The models are
the zoo's own (``flow.models``, the one definition of each), built on the
meta device (parameters with a shape and no storage) and traced with their
loss (``models.trace_loss``), so the variables are declared only.

    >>> program, names = build_program("mlp", layers=2, batch=4, hidden=8)
    >>> program.num_ops() > 0
    True
"""
from __future__ import annotations

from typing import Dict, Tuple

import oneflow_lite as flow
from oneflow_lite import _C, models


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
    with flow.device("meta"):
        if model == "gpt":
            net = models.GPT(models.GPTConfig(vocab_size=vocab, seq_len=seq, n_layer=layers,
                                              n_head=heads, n_embd=hidden))
        elif model == "mlp":
            if layers < 1:
                raise ValueError(f"build_program: mlp needs layers >= 1, got {layers}")
            net = models.MLP(models.MLPConfig(in_features=hidden, hidden=(hidden,) * (layers - 1),
                                              num_classes=hidden))
        elif model == "vgg16":
            net = models.VGG16(image_size=image_size, num_classes=num_classes)
        else:
            raise ValueError(f"build_program: unknown model '{model}' (gpt, mlp, vgg16)")
    g = models.trace_loss(net, batch_size=batch)
    g.builder.minimize(g.loss, "adam", lr=1e-4)
    return g.program, {"data": g.data, "labels": g.labels, "loss": g.loss}
