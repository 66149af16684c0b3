"""``MathMethods``: the Tensor methods and operators that compare, reduce
to bools or indices, do elementwise math and select (``a == b``, ``a < b``,
``~m``, ``any``, ``argmax``, ``max``, ``abs``, ``clamp``, ``std``,
``masked_fill``, ...). ``flow.Tensor`` inherits them; each forwards to the
function of the same name in ``_tensor_math``, where the work is. Kept apart
from ``_tensor`` so that file stays about one concern.

``__eq__`` compares elements (a bool tensor, as PyTorch); ``Tensor`` keeps
``__hash__ = object.__hash__``, so tensors stay usable as dict keys and in
sets (by identity). Not thread-safe: the eager frontend is single-threaded.
"""
from __future__ import annotations

from typing import Optional

from oneflow_lite import _dtype as dtypes

def math():
    """``_tensor_math``, imported late: it imports ``_tensor``."""
    from oneflow_lite import _tensor_math

    return _tensor_math


class MathMethods:
    """Mixed into ``flow.Tensor``; see the module docstring."""

    def __eq__(self, other):  # elementwise, as PyTorch: a bool tensor
        return math().compare_or_not_implemented("equal", self, other)

    def __ne__(self, other):
        return math().compare_or_not_implemented("not_equal", self, other)

    def __lt__(self, other):
        return math().compare_or_not_implemented("less", self, other)

    def __le__(self, other):
        return math().compare_or_not_implemented("less_equal", self, other)

    def __gt__(self, other):
        return math().compare_or_not_implemented("greater", self, other)

    def __ge__(self, other):
        return math().compare_or_not_implemented("greater_equal", self, other)

    eq = __eq__
    ne = __ne__
    lt = __lt__
    le = __le__
    gt = __gt__
    ge = __ge__

    def __invert__(self) -> Tensor:
        if self._dtype is not dtypes.bool_:
            raise TypeError(f"~ (bitwise not) is only supported on bool tensors here, got "
                            f"dtype {self._dtype.name}")
        return math().logical_not(self)

    def __and__(self, other) -> Tensor:
        return math().logical_and(self, other)

    def __or__(self, other) -> Tensor:
        return math().logical_or(self, other)

    def __xor__(self, other) -> Tensor:
        return math().logical_xor(self, other)

    __rand__ = __and__
    __ror__ = __or__
    __rxor__ = __xor__

    def logical_not(self) -> Tensor:
        return math().logical_not(self)

    def equal(self, other: Tensor) -> bool:
        return math().equal(self, other)

    def any(self, dim=None, keepdim: bool = False) -> Tensor:
        return math().any(self, dim, keepdim)

    def all(self, dim=None, keepdim: bool = False) -> Tensor:
        return math().all(self, dim, keepdim)

    def argmax(self, dim: Optional[int] = None, keepdim: bool = False) -> Tensor:
        return math().argmax(self, dim, keepdim)

    def argmin(self, dim: Optional[int] = None, keepdim: bool = False) -> Tensor:
        return math().argmin(self, dim, keepdim)

    def max(self, dim=None, keepdim: bool = False):
        return math().max(self, dim, keepdim)

    def min(self, dim=None, keepdim: bool = False):
        return math().min(self, dim, keepdim)

    def maximum(self, other) -> Tensor:
        return math().maximum(self, other)

    def minimum(self, other) -> Tensor:
        return math().minimum(self, other)

    def abs(self) -> Tensor:
        return math().abs(self)

    __abs__ = abs

    def exp(self) -> Tensor:
        return math().exp(self)

    def log(self) -> Tensor:
        return math().log(self)

    def sign(self) -> Tensor:
        return math().sign(self)

    def pow(self, exponent) -> Tensor:
        return math().pow(self, exponent)

    def __rpow__(self, base) -> Tensor:
        return math().pow(base, self)

    def clamp(self, min=None, max=None) -> Tensor:  # noqa: A002 (PyTorch's names)
        return math().clamp(self, min, max)

    clip = clamp

    def var(self, dim=None, unbiased: bool = True, keepdim: bool = False) -> Tensor:
        return math().var(self, dim, unbiased, keepdim)

    def std(self, dim=None, unbiased: bool = True, keepdim: bool = False) -> Tensor:
        return math().std(self, dim, unbiased, keepdim)

    def where(self, condition: Tensor, y) -> Tensor:
        return math().where(condition, self, y)

    def masked_fill(self, mask: Tensor, value) -> Tensor:
        return math().masked_fill(self, mask, value)

    def gather(self, dim: int, index: Tensor) -> Tensor:
        return math().gather(self, dim, index)

    def bool(self) -> Tensor:
        return self.to(dtypes.bool_)

    def int(self) -> Tensor:
        return self.to(dtypes.int32)
