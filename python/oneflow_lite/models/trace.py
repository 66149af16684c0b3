"""A zoo model plus its loss as a logical graph, ready to ``minimize`` and
run: ``trace_loss(model, batch_size)`` traces ``cross_entropy(model(data),
labels)`` (nn.graph_trace) with the inputs the model takes (``input_specs``)
and returns the graph and the names of its tensors. This is how code that
drives ``_C.Session`` or ``_C.DistributedSession`` directly (tests, bench)
gets a model's program; nn.Graph users never need it.

Variables are named by the model's state_dict keys ("h.0.attn.qkv.weight";
non-persistent buffers such as the causal mask by their buffer path) and
start at the model's current values, so tracing one model twice (two batch
sizes) gives two programs with the same initial weights. The model is put
in train() or eval() mode for the trace (dropout ops exist only in train
mode) and left in that mode. Not thread-safe (one tracer at a time).

    >>> import oneflow_lite as flow
    >>> cfg = flow.models.MLPConfig(in_features=4, hidden=(8,), num_classes=3)
    >>> g = flow.models.trace_loss(flow.models.MLP(cfg), batch_size=2)
    >>> g.data, g.labels, g.builder.shape(g.logits), g.builder.shape(g.loss)
    ('data', 'labels', [2, 3], [])
    >>> g.trainable
    ['fc0.weight', 'fc0.bias', 'fc1.weight', 'fc1.bias']
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional, Tuple

from oneflow_lite import nn
from oneflow_lite.graph_builder import GraphBuilder
from oneflow_lite.models.gpt import GPT
from oneflow_lite.models.mlp import MLP
from oneflow_lite.models.vgg import VGG
from oneflow_lite.nn.graph_trace import Spec, Tracer


@dataclass(frozen=True)
class LossGraph:
    """What ``trace_loss`` returns: the builder and the graph names of the
    inputs (``data``, ``labels``), the ``logits`` and the scalar ``loss``;
    ``trainable`` lists the trainable variables in declaration order."""

    builder: GraphBuilder
    data: str
    labels: str
    logits: str
    loss: str
    trainable: List[str]

    @property
    def program(self):
        return self.builder.program


def input_specs(model: nn.Module, batch_size: int) -> Tuple[Spec, Spec]:
    """(data, labels) specs of one batch: MLP [B, in] and [B]; GPT ids and
    labels [B, seq_len] int64; VGG images [B, C, S, S] and [B]. Float data
    takes the dtype of the model's parameters."""
    if batch_size < 1:
        raise ValueError(f"input_specs: batch_size={batch_size} is not positive")
    if not isinstance(model, (GPT, MLP, VGG)):
        raise TypeError(f"input_specs: {type(model).__name__} is not a flow.models model "
                        f"(MLP, GPT, VGG)")
    cfg = model.config
    if isinstance(model, GPT):
        ids = Spec([batch_size, cfg.seq_len], "int64")
        return ids, ids
    dtype = next(iter(model.parameters())).dtype
    labels = Spec([batch_size], "int64")
    if isinstance(model, MLP):
        return Spec([batch_size, cfg.in_features], dtype), labels
    s = cfg.image_size
    return Spec([batch_size, cfg.in_channels, s, s], dtype), labels


def trace_loss(model: nn.Module, batch_size: int, train: bool = True,
               builder: Optional[GraphBuilder] = None) -> LossGraph:
    """Traces the mean cross-entropy of ``model`` on one batch of
    ``batch_size`` into ``builder`` (a new one by default); inputs are
    named "data" and "labels"."""
    data_spec, labels_spec = input_specs(model, batch_size)
    model.train(train)
    tracer = Tracer(builder)
    tracer.add_module(model)
    with tracer:
        data = tracer.input("data", data_spec.shape, data_spec.dtype)
        labels = tracer.input("labels", labels_spec.shape, labels_spec.dtype)
        logits = model(data)
        loss = nn.functional.cross_entropy(logits, labels)
    return LossGraph(tracer.builder, data.graph_name, labels.graph_name, logits.graph_name,
                     loss.graph_name, list(tracer.trainable))
