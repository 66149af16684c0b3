"""Creation of eager tensors: ``flow.tensor``, ``from_numpy``, ``zeros``,
``ones``, ``full``, ``empty``, ``randn``, ``rand``, ``randint``, ``arange``,
``*_like``, and ``flow.device("meta")``, under which they make meta tensors
(shape and dtype, no value). Random draws come from ``_random`` (the
generator ``flow.manual_seed`` resets). The default device is a module-level
stack; not thread-safe.
"""
from __future__ import annotations

import numpy as np

from oneflow_lite import _dtype as dtypes
from oneflow_lite import _random
from oneflow_lite._tensor import Number, Tensor, _shape_arg, check_shape

_default_device = ["cpu"]


def _make(what: str, array_fn, shape, dtype, requires_grad) -> Tensor:
    d = dtypes.get(dtype)
    meta = _default_device[-1] == "meta" or d.numpy is None
    check_shape(shape, d, what, allocate=not meta)
    if meta:
        if _default_device[-1] != "meta":
            dtypes.numpy_of(d)  # raises: planning-only dtype outside meta
        return Tensor._wrap(None, shape, d, "meta", requires_grad)
    return Tensor._wrap(array_fn(tuple(shape), d.numpy), requires_grad=requires_grad)


def tensor(data, dtype=None, requires_grad: bool = False) -> Tensor:
    """A new tensor holding a copy of ``data`` (numpy array, list, number or
    Tensor). Python floats become float32, Python ints int64, bools bool."""
    if isinstance(data, Tensor):
        data = data._array()
    if dtype is None:
        array = np.array(data)
        if array.dtype.kind == "f" and not isinstance(data, np.ndarray):
            array = array.astype(np.float32)
        elif array.dtype.kind in "iu" and not isinstance(data, np.ndarray):
            array = array.astype(np.int64)
    else:
        array = np.array(data, dtype=dtypes.numpy_of(dtypes.get(dtype)))
    dtypes.get(array.dtype)  # raises on an unsupported dtype
    t = Tensor._wrap(array)
    if requires_grad:
        t.requires_grad_(True)
    return t


def from_numpy(array: np.ndarray) -> Tensor:
    """A tensor sharing ``array``'s memory."""
    if not isinstance(array, np.ndarray):
        raise TypeError(f"from_numpy: expected a numpy.ndarray, got {type(array).__name__}")
    dtypes.get(array.dtype)
    return Tensor._wrap(np.ascontiguousarray(array))


def zeros(*shape, dtype=dtypes.float32, requires_grad: bool = False) -> Tensor:
    return _make("zeros", np.zeros, _shape_arg(shape), dtype, requires_grad)


def ones(*shape, dtype=dtypes.float32, requires_grad: bool = False) -> Tensor:
    return _make("ones", np.ones, _shape_arg(shape), dtype, requires_grad)


def full(shape, value: Number, dtype=dtypes.float32, requires_grad: bool = False) -> Tensor:
    return _make("full", lambda s, d: np.full(s, value, d), _shape_arg([shape]), dtype,
                 requires_grad)


def empty(*shape, dtype=dtypes.float32, requires_grad: bool = False) -> Tensor:
    return _make("empty", np.zeros, _shape_arg(shape), dtype, requires_grad)


def randn(*shape, dtype=dtypes.float32, requires_grad: bool = False) -> Tensor:
    """Standard normal draws from the generator ``flow.manual_seed`` resets."""
    return _make("randn", lambda s, d: _random.generator().standard_normal(s).astype(d),
                 _shape_arg(shape), dtype, requires_grad)


def rand(*shape, dtype=dtypes.float32, requires_grad: bool = False) -> Tensor:
    """Uniform [0, 1) draws from the generator ``flow.manual_seed`` resets."""
    return _make("rand", lambda s, d: _random.generator().random(s).astype(d),
                 _shape_arg(shape), dtype, requires_grad)


def randint(low: int, high: int, shape, dtype=dtypes.int64) -> Tensor:
    return _make("randint", lambda s, d: _random.generator().integers(low, high, s).astype(d),
                 _shape_arg([shape]), dtype, False)


def arange(start, end=None, step=1, dtype=None) -> Tensor:
    if end is None:
        start, end = 0, start
    array = np.arange(start, end, step)
    if dtype is None:
        dtype = dtypes.int64 if array.dtype.kind in "iu" else dtypes.float32
    return tensor(array, dtype=dtype)


def zeros_like(t: Tensor, dtype=None) -> Tensor:
    return zeros(*t.shape, dtype=dtype or t.dtype)


def ones_like(t: Tensor, dtype=None) -> Tensor:
    return ones(*t.shape, dtype=dtype or t.dtype)


class device:  # noqa: N801 (PyTorch's spelling)
    """``with flow.device("meta"):`` creates tensors (and so module
    parameters) with shape and dtype only; ``"cpu"`` is the default."""

    _KINDS = ("cpu", "meta")

    def __init__(self, kind: str) -> None:
        if kind not in self._KINDS:
            raise ValueError(f"device: unknown device '{kind}' (expected one of {self._KINDS})")
        self.type = kind

    def __enter__(self):
        _default_device.append(self.type)
        return self

    def __exit__(self, *exc):
        _default_device.pop()
        return False

    def __repr__(self) -> str:
        return f"device(type='{self.type}')"
