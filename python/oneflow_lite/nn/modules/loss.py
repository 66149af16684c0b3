"""``nn.CrossEntropyLoss``: softmax cross-entropy against integer labels."""
from __future__ import annotations

from oneflow_lite.nn import functional as F
from oneflow_lite.nn.module import Module


class CrossEntropyLoss(Module):
    def __init__(self, reduction: str = "mean") -> None:
        super().__init__()
        if reduction not in ("mean", "sum", "none"):
            raise ValueError(f"CrossEntropyLoss: unknown reduction '{reduction}' (mean, sum or "
                             f"none)")
        self.reduction = reduction

    def forward(self, logits, labels):
        return F.cross_entropy(logits, labels, self.reduction)
