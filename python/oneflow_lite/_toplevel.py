"""Top-level functions of ``flow`` under PyTorch's names: ``sum``,
``matmul``, ``allclose``, ``is_tensor``, the creation functions
``randperm``, ``eye``, ``linspace``, and the grad-mode switches
``set_grad_enabled`` and ``inference_mode``.

``sum`` and ``matmul`` are the Tensor methods (registered ops through
``_dispatch.apply``); ``allclose`` compares two values on the host and
returns a Python bool (it records nothing); the creation functions make
leaf tensors from numpy (``randperm`` draws from the generator
``flow.manual_seed`` resets). Grad mode is the module-level flag of
``_autograd``; not thread-safe (as the eager frontend).
"""
from __future__ import annotations

import numpy as np

from oneflow_lite import _autograd, _creation, _random
from oneflow_lite import _dtype as dtypes
from oneflow_lite._tensor import Tensor


def is_tensor(obj) -> bool:
    """True for a flow.Tensor (a Parameter included)."""
    return isinstance(obj, Tensor)


def _tensor_arg(x, what: str) -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(f"{what}: expects a flow.Tensor, got {type(x).__name__}")
    return x


def sum(input, dim=None, keepdim: bool = False) -> Tensor:  # noqa: A001 (PyTorch's name)
    """``input.sum(dim, keepdim)``: over every axis, or ``dim`` (an int or
    a tuple)."""
    return _tensor_arg(input, "flow.sum").sum(dim, keepdim)


def matmul(input, other) -> Tensor:
    """``input @ other``: 2-d matmul, or batched over leading axes."""
    return _tensor_arg(input, "flow.matmul") @ _tensor_arg(other, "flow.matmul")


def allclose(input, other, rtol: float = 1e-5, atol: float = 1e-8,
             equal_nan: bool = False) -> bool:
    """``|input - other| <= atol + rtol * |other|`` everywhere (broadcast),
    as numpy and PyTorch; a Python bool."""
    a = np.asarray(_tensor_arg(input, "flow.allclose")._array())
    b = np.asarray(_tensor_arg(other, "flow.allclose")._array())
    try:
        np.broadcast_shapes(a.shape, b.shape)
    except ValueError:
        raise ValueError(f"flow.allclose: shapes {list(a.shape)} and {list(b.shape)} do not "
                         f"broadcast") from None
    return bool(np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan))


def randperm(n: int, dtype=dtypes.int64) -> Tensor:
    """A random permutation of 0..n-1, drawn from the generator
    ``flow.manual_seed`` resets."""
    if not isinstance(n, (int, np.integer)) or n < 0:
        raise ValueError(f"randperm: n must be a non-negative int, got {n!r}")
    perm = _random.generator().permutation(int(n))
    return _creation.tensor(perm, dtype=dtype)


def eye(n: int, m: int = None, dtype=dtypes.float32, requires_grad: bool = False) -> Tensor:
    """The n x m (default n x n) identity matrix."""
    m = n if m is None else m
    for name, v in (("n", n), ("m", m)):
        if not isinstance(v, (int, np.integer)) or v < 0:
            raise ValueError(f"eye: {name} must be a non-negative int, got {v!r}")
    return _creation.tensor(np.eye(int(n), int(m)), dtype=dtype, requires_grad=requires_grad)


def linspace(start: float, end: float, steps: int, dtype=dtypes.float32,
             requires_grad: bool = False) -> Tensor:
    """``steps`` evenly spaced values from ``start`` to ``end``, both
    included."""
    if not isinstance(steps, (int, np.integer)) or steps < 0:
        raise ValueError(f"linspace: steps must be a non-negative int, got {steps!r}")
    values = np.linspace(float(start), float(end), int(steps))
    return _creation.tensor(values, dtype=dtype, requires_grad=requires_grad)


class set_grad_enabled(_autograd._GradMode):  # noqa: N801 (PyTorch's spelling)
    """Grad mode on or off: at once when called (``flow.set_grad_enabled(False)``),
    and back to the previous mode on leaving when used as a context manager
    or decorator."""

    def __init__(self, mode: bool) -> None:
        super().__init__(bool(mode))
        self._prev = _autograd.is_grad_enabled()
        _autograd._grad_enabled = bool(mode)

    def __enter__(self):
        return self

    def __call__(self, fn):  # as a decorator: the mode only while fn runs
        _autograd._grad_enabled = self._prev
        return _autograd._GradMode(self._enabled)(fn)


def inference_mode(mode: bool = True) -> "_autograd._GradMode":
    """Context manager and decorator: ``no_grad`` (``mode=True``) or grad
    enabled (``mode=False``); no tape is recorded inside. PyTorch's
    inference tensors have no separate kind here."""
    return _autograd._GradMode(not mode)
