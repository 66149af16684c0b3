"""Probe programs for kernel calibration: the models users plan, traced small.

``probes(scale)`` returns training Programs (forward, backward, optimizer
update) of ``flow.models.GPT`` (AdamW) and ``flow.models.VGG`` (SGD) at a
few sizes, so that every op type those models use (matmul, batch_matmul,
conv2d, pooling, elementwise, gelu, softmax, layer_norm, reductions, cross
entropy, embedding, the updates, and every gradient) is timed through its
real kernel at several FLOP counts (``_C.calibrate(kernel_probes=...)``).
``scale`` multiplies the batch (1.0: sizes that reach the fidelity bench's
GPT, hidden 512, sequence 128, vocabulary 4096, batch 16; the smoke test
uses a tiny scale). Weights are drawn with a fixed seed.

    >>> from oneflow_lite import calibrate_probes
    >>> len(calibrate_probes.probes(scale=0.125)) >= 2
    True
"""
from __future__ import annotations

from typing import List, Sequence

GPT_WIDTHS = (128, 256, 512)        # hidden sizes of the GPT probes (heads of 64)
GPT_SEQ, GPT_VOCAB, GPT_BATCH = 128, 4096, 16
VGG_WIDTHS = (16, 32, 64)           # channels of the first conv of the VGG probes
VGG_IMAGE, VGG_BATCH = 32, 16
ADAMW = dict(lr=1e-3, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.01)


def with_loss(flow, model):
    """`model` with the cross-entropy of its output against fed labels (the probes'
    and bench/calibration.py's training graphs)."""
    class WithLoss(flow.nn.Module):
        def __init__(self):
            super().__init__()
            self.model = model

        def forward(self, x, labels):
            return flow.nn.functional.cross_entropy(self.model(x), labels)

    return WithLoss()


def gpt_probe(n_embd: int, batch: int, seq_len: int = GPT_SEQ, vocab: int = GPT_VOCAB):
    """One GPT block's training Program (AdamW) at hidden size ``n_embd``."""
    import oneflow_lite as flow

    flow.manual_seed(0)
    config = flow.models.GPTConfig(n_layer=1, n_embd=n_embd, n_head=max(1, n_embd // 64),
                                   seq_len=seq_len, vocab_size=vocab)
    spec = flow.nn.graph_trace.Spec([batch, seq_len], flow.int64)
    traced = flow.nn.graph_trace.trace(with_loss(flow, flow.models.GPT(config)), spec, spec,
                                       input_names=["ids", "labels"])
    traced.builder.minimize(traced.output_names[0], "adamw", **ADAMW)
    return traced.program


def vgg_probe(width: int, batch: int, image: int = VGG_IMAGE):
    """A small VGG's training Program (SGD): convs of ``width`` and ``2 width`` channels."""
    import oneflow_lite as flow

    flow.manual_seed(0)
    config = flow.models.VGGConfig(features=(width, "M", 2 * width, "M"), image_size=image,
                                   fc=(4 * width,), num_classes=10)
    images = flow.nn.graph_trace.Spec([batch, 3, image, image], flow.float32)
    labels = flow.nn.graph_trace.Spec([batch], flow.int64)
    traced = flow.nn.graph_trace.trace(with_loss(flow, flow.models.VGG(config)), images, labels,
                                       input_names=["images", "labels"])
    traced.builder.minimize(traced.output_names[0], "sgd", lr=0.01)
    return traced.program


def probes(scale: float = 1.0, gpt_widths: Sequence[int] = GPT_WIDTHS,
           vgg_widths: Sequence[int] = VGG_WIDTHS) -> List:
    """The probe Programs: GPT at each width, then VGG at each width."""
    if not scale > 0:
        raise ValueError(f"calibrate_probes: scale={scale} must be > 0")
    gpt_batch = max(1, round(GPT_BATCH * scale))
    vgg_batch = max(1, round(VGG_BATCH * scale))
    seq = max(8, round(GPT_SEQ * min(1.0, scale)))
    return ([gpt_probe(w, gpt_batch, seq) for w in gpt_widths]
            + [vgg_probe(w, vgg_batch) for w in vgg_widths])
