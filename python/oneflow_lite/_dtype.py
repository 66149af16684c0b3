"""dtype objects of the frontend: ``flow.float32``, ``float64``, ``int32``,
``int64``, ``bool`` (comparisons and masks), and ``bfloat16``/``float16``
(names for planning only: no eager tensor holds them, since numpy and the
CPU kernels do not).

Immutable module-level singletons; thread-safe.
"""
from __future__ import annotations

from typing import Optional, Union

import numpy as np


class dtype:  # noqa: N801 (PyTorch's spelling)
    """A tensor element type; ``name`` matches the C++ DataTypeName."""

    __slots__ = ("name", "numpy", "itemsize")

    def __init__(self, name: str, numpy_dtype: Optional[np.dtype], itemsize: int) -> None:
        self.name = name
        self.numpy = numpy_dtype
        self.itemsize = itemsize

    @property
    def is_floating_point(self) -> bool:
        return self.name in ("float32", "float64", "bfloat16", "float16")

    def __repr__(self) -> str:
        return f"oneflow_lite.{self.name}"

    def __reduce__(self):
        return (get, (self.name,))


float32 = dtype("float32", np.dtype(np.float32), 4)
float64 = dtype("float64", np.dtype(np.float64), 8)
int32 = dtype("int32", np.dtype(np.int32), 4)
int64 = dtype("int64", np.dtype(np.int64), 8)
bool_ = dtype("bool", np.dtype(np.bool_), 1)
bfloat16 = dtype("bfloat16", None, 2)
float16 = dtype("float16", None, 2)
float = float32  # noqa: A001 (PyTorch alias)
double = float64
long = int64
int = int32  # noqa: A001

_BY_NAME = {d.name: d for d in (float32, float64, int32, int64, bool_, bfloat16, float16)}
_BY_NUMPY = {d.numpy: d for d in (float32, float64, int32, int64, bool_)}


def get(value: Union[str, "dtype", np.dtype, type, None]) -> "dtype":
    """The dtype named by ``value`` (a dtype, its name, or a numpy dtype)."""
    if isinstance(value, dtype):
        return value
    if isinstance(value, np.dtype) and value in _BY_NUMPY:  # every eager result
        return _BY_NUMPY[value]
    if isinstance(value, str) and value in _BY_NAME:
        return _BY_NAME[value]
    try:
        name = np.dtype(value).name
    except TypeError:
        name = None
    if name in _BY_NAME:
        return _BY_NAME[name]
    raise TypeError(f"unsupported dtype {value!r} (expected one of {sorted(_BY_NAME)})")


def numpy_of(d: "dtype") -> np.dtype:
    """The numpy dtype of ``d``; raises for planning-only dtypes."""
    if d.numpy is None:
        raise TypeError(f"dtype {d.name} is for planning only: eager tensors cannot hold it "
                        f"(use float32 or float64, or declare the model on the 'meta' device)")
    return d.numpy


bool = bool_  # noqa: A001 (PyTorch's name; last, so the module's code sees the builtin)
