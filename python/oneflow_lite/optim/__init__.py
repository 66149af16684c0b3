"""``flow.optim``: optimizers over the registered C++ update ops and
learning-rate schedules."""
from oneflow_lite.optim import lr_scheduler  # noqa: F401
from oneflow_lite.optim.optimizer import SGD, Adam, AdamW, Optimizer

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "lr_scheduler"]
