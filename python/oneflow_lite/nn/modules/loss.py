"""The loss modules of ``flow.nn`` (PyTorch's names and arguments):
CrossEntropyLoss, MSELoss, L1Loss, NLLLoss, BCEWithLogitsLoss; each calls
its ``flow.nn.functional`` function. Not thread-safe."""
from __future__ import annotations

from oneflow_lite.nn import functional as F
from oneflow_lite.nn.module import Module


class _Loss(Module):
    def __init__(self, reduction: str = "mean") -> None:
        super().__init__()
        if reduction not in ("mean", "sum", "none"):
            raise ValueError(f"{type(self).__name__}: unknown reduction '{reduction}' (mean, "
                             f"sum or none)")
        self.reduction = reduction

    def extra_repr(self) -> str:
        return f"reduction={self.reduction!r}"


class CrossEntropyLoss(_Loss):
    def forward(self, logits, labels):
        return F.cross_entropy(logits, labels, self.reduction)


class MSELoss(_Loss):
    def forward(self, input, target):
        return F.mse_loss(input, target, self.reduction)


class L1Loss(_Loss):
    def forward(self, input, target):
        return F.l1_loss(input, target, self.reduction)


class NLLLoss(_Loss):
    """For log-probabilities (e.g. ``F.log_softmax``); class ``weight``
    optional, ``ignore_index`` targets count for nothing."""

    def __init__(self, weight=None, ignore_index: int = -100, reduction: str = "mean") -> None:
        super().__init__(reduction)
        self.ignore_index = ignore_index
        if weight is not None:
            self.register_buffer("weight", weight)
        else:
            self.weight = None

    def forward(self, input, target):
        return F.nll_loss(input, target, self.weight, self.ignore_index, self.reduction)


class BCEWithLogitsLoss(_Loss):
    """Sigmoid and binary cross-entropy in one stable step."""

    def __init__(self, weight=None, reduction: str = "mean", pos_weight=None) -> None:
        super().__init__(reduction)
        for name, t in (("weight", weight), ("pos_weight", pos_weight)):
            if t is not None:
                self.register_buffer(name, t)
            else:
                object.__setattr__(self, name, None)

    def forward(self, input, target):
        return F.binary_cross_entropy_with_logits(input, target, self.weight, self.reduction,
                                                  self.pos_weight)
