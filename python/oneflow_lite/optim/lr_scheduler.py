"""Learning-rate schedules: ``StepLR`` and ``CosineAnnealingLR``. Each
``step()`` (call it after ``optimizer.step()``) advances the epoch counter
and writes the new "lr" into every param group. Not thread-safe."""
from __future__ import annotations

import math
from typing import List

from oneflow_lite.optim.optimizer import Optimizer


class LRScheduler:
    def __init__(self, optimizer: Optimizer) -> None:
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(self).__name__}: expected a flow.optim optimizer, got "
                            f"{type(optimizer).__name__}")
        self.optimizer = optimizer
        self.base_lrs: List[float] = [g["lr"] for g in optimizer.param_groups]
        self.last_epoch = 0

    def lr_at(self, base_lr: float, epoch: int) -> float:
        raise NotImplementedError

    def get_last_lr(self) -> List[float]:
        return [g["lr"] for g in self.optimizer.param_groups]

    def step(self) -> None:
        self.last_epoch += 1
        for group, base in zip(self.optimizer.param_groups, self.base_lrs):
            group["lr"] = self.lr_at(base, self.last_epoch)

    def state_dict(self) -> dict:
        return {"last_epoch": self.last_epoch, "base_lrs": list(self.base_lrs)}

    def load_state_dict(self, state: dict) -> None:
        self.last_epoch = int(state["last_epoch"])
        self.base_lrs = [float(v) for v in state["base_lrs"]]
        for group, base in zip(self.optimizer.param_groups, self.base_lrs):
            group["lr"] = self.lr_at(base, self.last_epoch)


class StepLR(LRScheduler):
    """lr = base * gamma ** (epoch // step_size)."""

    def __init__(self, optimizer: Optimizer, step_size: int, gamma: float = 0.1) -> None:
        if step_size <= 0:
            raise ValueError(f"StepLR: step_size={step_size} must be positive")
        super().__init__(optimizer)
        self.step_size, self.gamma = int(step_size), float(gamma)

    def lr_at(self, base_lr: float, epoch: int) -> float:
        return base_lr * self.gamma ** (epoch // self.step_size)


class CosineAnnealingLR(LRScheduler):
    """lr = eta_min + (base - eta_min) * (1 + cos(pi * min(epoch, T_max) /
    T_max)) / 2: base at epoch 0, eta_min from epoch T_max on."""

    def __init__(self, optimizer: Optimizer, T_max: int,  # noqa: N803 (PyTorch's name)
                 eta_min: float = 0.0) -> None:
        if T_max <= 0:
            raise ValueError(f"CosineAnnealingLR: T_max={T_max} must be positive")
        super().__init__(optimizer)
        self.T_max, self.eta_min = int(T_max), float(eta_min)

    def lr_at(self, base_lr: float, epoch: int) -> float:
        t = min(epoch, self.T_max)
        cosine = (1 + math.cos(math.pi * t / self.T_max)) / 2
        return self.eta_min + (base_lr - self.eta_min) * cosine
