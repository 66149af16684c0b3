"""The model graphs of ``bench/run.sh search``, ``paper`` and ``ilp``.

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

``build_branches`` adds two graphs that are not chains, written op by op
(no zoo model has them): ``residual`` (blocks x + W2 relu(W1 x)) and
``two_branch`` (a long and a short matmul chain from one input, added).

    >>> program, names = build_branches("two_branch", layers=2, batch=4, hidden=8)
    >>> program.num_ops() > 0
    True
"""
from __future__ import annotations

from typing import Dict, Tuple

import oneflow_lite as flow
from oneflow_lite import _C, models
from oneflow_lite.graph_builder import GraphBuilder


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


def build_branches(kind: str, layers: int, batch: int, hidden: int,
                   classes: int = 0) -> Tuple["_C.Program", Dict[str, str]]:
    """A training graph (forward, backward, Adam) with declared-only float32
    variables, inputs ``data`` [batch, hidden] and ``labels`` [batch]:

    ``residual``: ``layers`` blocks h <- h + relu(h W1) W2, then the logits
    h Wout [hidden, classes] (``classes`` 0: ``hidden``).
    ``two_branch``: a long branch (``layers`` matmuls, each followed by a
    relu) and a short one (one matmul) from ``data``, added, then the logits.
    The loss is the mean sparse softmax cross entropy.
    """
    if kind not in ("residual", "two_branch"):
        raise ValueError(f"build_branches: unknown kind '{kind}' (residual, two_branch)")
    if layers < 1:
        raise ValueError(f"build_branches: needs layers >= 1, got {layers}")
    classes = classes or hidden
    b = GraphBuilder()
    data = b.input("data", [batch, hidden])
    labels = b.input("labels", [batch], "int64")

    def weight(name, shape):
        b.program.add_variable_desc(name, list(shape), "float32", True)
        return name

    h = data
    if kind == "residual":
        for i in range(layers):
            inner = b.relu(b.matmul(h, weight(f"w{i}a", (hidden, hidden))))
            h = b.add(h, b.matmul(inner, weight(f"w{i}b", (hidden, hidden))))
    else:
        for i in range(layers):
            h = b.relu(b.matmul(h, weight(f"long{i}", (hidden, hidden))))
        h = b.add(h, b.matmul(data, weight("short", (hidden, hidden))))
    logits = b.matmul(h, weight("out", (hidden, classes)))
    loss = b.reduce_mean(b.sparse_softmax_cross_entropy(logits, labels))
    b.minimize(loss, "adam", lr=1e-4)
    return b.program, {"data": data, "labels": labels, "loss": loss}
