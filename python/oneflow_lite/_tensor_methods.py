"""Tensor methods composed from registered ops: shape methods (``squeeze``,
``unsqueeze``, ``expand``, ``repeat``, ``chunk``, ``split``, ``t``,
``contiguous``), ``new_zeros`` / ``new_ones`` / ``new_full`` and the
in-place ops ``add_``, ``zero_``, ``fill_``, ``copy_``.

No op is written here: each method is reshape, broadcast_to, slice,
transpose or add through ``_dispatch.apply``, so autograd and nn.Graph's
tracer see registered ops. ``install(Tensor)`` binds them (``_tensor``
calls it once).

In-place ops follow PyTorch's autograd rules:

- on a leaf that requires grad, while grad mode is on, they raise (as
  PyTorch: "a leaf Variable that requires grad is being used in an in-place
  operation"); under ``flow.no_grad()`` they write its value;
- when autograd must see them (grad mode on and the tensor, or ``add_``'s or
  ``copy_``'s source, requires grad) the tensor takes the result's value
  and tape node; its old array, which recorded ops may have saved, is left
  untouched; while nn.Graph traces, a graph tensor takes the result's graph
  tensor (an eager parameter or buffer cannot: that raises);
- otherwise the tensor's own buffer is written, so a ``detach()`` of it or
  its ``numpy()`` array sees the change (no version counter: an array
  saved by an earlier recorded op and then written in place gives that
  op's backward the new value, unlike PyTorch, which raises).

Not thread-safe (the eager frontend is single-threaded).
"""
from __future__ import annotations

from typing import List, Sequence, Union

import numpy as np

from oneflow_lite import _autograd, _device
from oneflow_lite import _dtype as dtypes

Number = Union[int, float]


def _apply(op_type: str, inputs: list, attrs: dict = None):
    from oneflow_lite._dispatch import apply  # cycle: _dispatch imports _tensor

    return apply(op_type, inputs, attrs or {})


def _dim(self, dim: int, what: str, extra: int = 0) -> int:
    """``dim`` in [0, ndim + extra), negative counted from the end."""
    n = self.ndim + extra
    if not isinstance(dim, (int, np.integer)) or not -max(n, 1) <= dim < max(n, 1):
        raise IndexError(f"{what}: dim {dim!r} is out of range for a tensor of {self.ndim} "
                         f"dims (shape {list(self.shape)})")
    return int(dim) % max(n, 1)


def _shape_args(shape) -> List[int]:
    if len(shape) == 1 and isinstance(shape[0], (list, tuple)):
        shape = shape[0]
    return [int(d) for d in shape]


# ---- shape ------------------------------------------------------------------------
def squeeze(self, dim=None):
    """Drops the size-1 axes (every one, or only ``dim``, an int or a
    tuple, where its size is 1, as PyTorch)."""
    if dim is None:
        dims = [a for a, n in enumerate(self.shape) if n == 1]
    else:
        dims = [dim] if isinstance(dim, (int, np.integer)) else list(dim)
        dims = [a for a in (_dim(self, d, "squeeze") for d in dims) if self.shape[a] == 1]
    if not self.ndim:
        return self.reshape([])
    return self.reshape([n for a, n in enumerate(self.shape) if a not in dims])


def unsqueeze(self, dim: int):
    """A size-1 axis inserted at ``dim`` (in [-ndim-1, ndim])."""
    d = _dim(self, dim, "unsqueeze", extra=1)
    shape = list(self.shape)
    shape.insert(d, 1)
    return self.reshape(shape)


def expand(self, *sizes):
    """A view of a larger size: size-1 axes repeated (``-1`` keeps an axis),
    new axes in front; the gradient sums back (broadcast_to's rule)."""
    sizes = _shape_args(sizes)
    if len(sizes) < self.ndim:
        raise ValueError(f"expand: {len(sizes)} sizes {sizes} for a tensor of {self.ndim} dims "
                         f"(shape {list(self.shape)}); give at least one per dim")
    lead = len(sizes) - self.ndim
    target = []
    for a, n in enumerate(sizes):
        own = self.shape[a - lead] if a >= lead else None
        if n == -1:
            if own is None:
                raise ValueError(f"expand: size -1 at new leading axis {a} of {sizes}")
            n = own
        if n < 0 or (own is not None and own != 1 and own != n):
            raise ValueError(f"expand: cannot expand shape {list(self.shape)} to {sizes} "
                             f"(axis {a}: {own} -> {n}; only size-1 axes expand)")
        target.append(n)
    if target == list(self.shape):
        return self
    return _apply("broadcast_to", [self], {"shape": target})


def expand_as(self, other):
    return self.expand(list(other.shape))


def repeat(self, *repeats):
    """``self`` tiled ``repeats[i]`` times along axis i (numpy's tile; extra
    repeats add leading axes): reshape, broadcast_to, reshape."""
    reps = _shape_args(repeats)
    if len(reps) < self.ndim:
        raise ValueError(f"repeat: {len(reps)} repeats {reps} for a tensor of {self.ndim} dims; "
                         f"give at least one per dim")
    if any(r < 0 for r in reps):
        raise ValueError(f"repeat: repeats {reps} must not be negative")
    shape = [1] * (len(reps) - self.ndim) + list(self.shape)
    spread = [d for n in shape for d in (1, n)]
    tiled = [d for r, n in zip(reps, shape) for d in (r, n)]
    x = self.reshape(spread)
    if tiled != spread:
        x = _apply("broadcast_to", [x], {"shape": tiled})
    return x.reshape([r * n for r, n in zip(reps, shape)])


def _slice_along(self, axis: int, begin: int, end: int):
    start = [0] * self.ndim
    stop = list(self.shape)
    start[axis], stop[axis] = begin, end
    return _apply("slice", [self], {"start": start, "stop": stop, "step": [1] * self.ndim})


def split(self, split_size_or_sections, dim: int = 0):
    """Pieces along ``dim``: of ``split_size`` each (the last may be
    smaller), or of the listed sizes (which must sum to the axis)."""
    axis = _dim(self, dim, "split")
    n = self.shape[axis]
    if isinstance(split_size_or_sections, (int, np.integer)):
        size = int(split_size_or_sections)
        if size <= 0:
            raise ValueError(f"split: split_size must be positive, got {size}")
        sizes = [min(size, n - b) for b in range(0, n, size)] or [0]
    else:
        sizes = [int(s) for s in split_size_or_sections]
        if sum(sizes) != n or any(s < 0 for s in sizes):
            raise ValueError(f"split: sections {sizes} do not sum to {n}, the size of dim "
                             f"{axis} (shape {list(self.shape)})")
    out, begin = [], 0
    for s in sizes:
        out.append(_slice_along(self, axis, begin, begin + s))
        begin += s
    return tuple(out)


def chunk(self, chunks: int, dim: int = 0):
    """At most ``chunks`` pieces along ``dim``, each ceil(n / chunks) long
    (the last may be smaller), as PyTorch."""
    if not isinstance(chunks, (int, np.integer)) or chunks <= 0:
        raise ValueError(f"chunk: chunks must be a positive int, got {chunks!r}")
    n = self.shape[_dim(self, dim, "chunk")]
    return split(self, max(-(-n // int(chunks)), 1), dim)


def t(self):
    """The transpose of a matrix; a 0-d or 1-d tensor is returned as is."""
    if self.ndim > 2:
        raise ValueError(f"t: expects a tensor of at most 2 dims, got shape "
                         f"{list(self.shape)}; use transpose(dim0, dim1) or permute")
    return self if self.ndim < 2 else self.transpose(0, 1)


def contiguous(self):
    """``self``: every eager tensor is stored contiguously already."""
    return self


# ---- new tensors like self --------------------------------------------------------
def new_full(self, size, fill_value: Number, dtype=None, requires_grad: bool = False):
    """A tensor of ``size`` filled with ``fill_value``, with ``self``'s dtype
    (or ``dtype``) and device."""
    from oneflow_lite import _creation

    size = _shape_args([size]) if not isinstance(size, (int, np.integer)) else [int(size)]
    out = _creation.full(size, fill_value, dtype=dtype or self.dtype)
    if self.is_cuda:
        out = out.to(self.device)
    return out.requires_grad_(True) if requires_grad else out


def new_zeros(self, *size, dtype=None, requires_grad: bool = False):
    return new_full(self, _shape_args(size), 0, dtype, requires_grad)


def new_ones(self, *size, dtype=None, requires_grad: bool = False):
    return new_full(self, _shape_args(size), 1, dtype, requires_grad)


# ---- in place ---------------------------------------------------------------------
def _check_leaf(self, what: str) -> None:
    if self.requires_grad and self._node is None and _autograd.is_grad_enabled():
        raise RuntimeError(f"{what}: a leaf tensor that requires grad (shape "
                           f"{list(self.shape)}) is being used in an in-place operation; "
                           f"wrap it in flow.no_grad() to change its value")


def _lazy(t) -> bool:
    """A graph tensor of the trace being built (nn.Graph's LazyTensor)."""
    return hasattr(t, "graph_name")


def _take(self, result, what: str) -> None:
    """``self`` becomes ``result``: its value and tape node, or, tracing,
    its graph tensor. An eager tensor (a parameter, a buffer) cannot take a
    graph tensor: nn.Graph has no assignment op."""
    if _lazy(self):
        self.graph_name = result.graph_name
        return
    if result._value is None:
        raise NotImplementedError(f"{what}: writing a graph value into an eager tensor (shape "
                                  f"{list(self.shape)}, e.g. a parameter or buffer) inside "
                                  f"nn.Graph is not supported; compute a new tensor instead")
    self._value = result._value
    self._node = result._node
    self.requires_grad = result.requires_grad


def _write(self, array: np.ndarray) -> None:
    """Writes ``array`` (self's shape and dtype) into self's own buffer."""
    self._array()  # raises when there is no value
    if _device.is_device_value(self._value) or not self._value.flags.writeable:
        self._value = _device.like_value(np.array(array, copy=True), self._value)
    else:
        np.copyto(self._value, array)


def _alias(self):
    """A new Tensor object with self's value and tape node: the input of an
    in-place op's recorded result (which ``self`` then becomes), so the
    tape never points from self back to itself."""
    from oneflow_lite._tensor import Tensor

    out = Tensor._wrap(self._value, self._shape, self._dtype, self._device)
    out._node, out.requires_grad = self._node, self.requires_grad
    return out


def _base(self):
    """The input an in-place op computes from: ``self`` while tracing (a
    graph tensor has no tape), else an alias."""
    return self if _lazy(self) else _alias(self)


def _check_broadcast(what: str, other, self) -> None:
    try:
        ok = np.broadcast_shapes(tuple(other.shape), tuple(self.shape)) == tuple(self.shape)
    except ValueError:
        ok = False
    if not ok:
        raise ValueError(f"{what} of shape {list(other.shape)} does not broadcast to self's "
                         f"shape {list(self.shape)}")


def _records(*tensors) -> bool:
    return _autograd.is_grad_enabled() and any(
        getattr(t, "requires_grad", False) for t in tensors)


def add_(self, other, alpha: Number = 1):
    """``self += alpha * other`` in place (``other`` a Tensor or number,
    broadcast to self's shape, not the other way)."""
    from oneflow_lite._tensor import Tensor

    _check_leaf(self, "add_")
    if isinstance(other, np.ndarray):
        other = Tensor._wrap(other)
    if isinstance(other, Tensor):
        if other.dtype is not self.dtype:
            raise TypeError(f"add_: other has dtype {other.dtype.name}, self "
                            f"{self.dtype.name}; cast one with .to(dtype)")
        _check_broadcast("add_: other", other, self)
        result = _base(self) + (other if alpha == 1 else other * alpha)
    else:
        result = _base(self) + float(other) * alpha
        if result.dtype is not self.dtype:
            raise TypeError(f"add_: {other!r} * {alpha!r} on a {self.dtype.name} tensor")
    if _records(self, other) or result._value is None:
        _take(self, result, "add_")
    else:
        _write(self, result._array())
    return self


def fill_(self, value: Number):
    """Every element set to ``value`` in place."""
    _check_leaf(self, "fill_")
    if isinstance(value, np.ndarray) or hasattr(value, "item"):
        value = value.item()
    if _lazy(self):
        _take(self, _apply("zeros_like", [self]) + value, "fill_")
        return self
    array = np.full(self.shape, value, dtypes.numpy_of(self.dtype))
    if self._node is not None:  # a non-leaf: the result no longer depends on the tape
        from oneflow_lite._tensor import Tensor

        _take(self, Tensor._wrap(_device.like_value(array, self._value)), "fill_")
    else:
        _write(self, array)
    return self


def zero_(self):
    return fill_(self, 0)


def copy_(self, src):
    """``src``'s values (broadcast to self's shape, cast to self's dtype)
    written into ``self``; differentiable in ``src`` where it requires grad."""
    from oneflow_lite._tensor import Tensor

    _check_leaf(self, "copy_")
    if isinstance(src, np.ndarray):
        src = Tensor._wrap(src)
    if not isinstance(src, Tensor):
        raise TypeError(f"copy_: src must be a flow.Tensor or numpy array, got "
                        f"{type(src).__name__}")
    _check_broadcast("copy_: src", src, self)
    if (_records(src) and self.dtype.is_floating_point) or _lazy(self) or _lazy(src):
        if src.dtype is not self.dtype:
            src = _apply("cast", [src], {"dtype": self.dtype.name})
        _take(self, src.expand(list(self.shape)) * 1, "copy_")  # * 1: a fresh value
        return self
    array = np.broadcast_to(src._array(), self.shape).astype(dtypes.numpy_of(self.dtype))
    if self._node is not None:
        _take(self, Tensor._wrap(_device.like_value(array, self._value)), "copy_")
    else:
        _write(self, array)
    return self


METHODS = (squeeze, unsqueeze, expand, expand_as, repeat, split, chunk, t, contiguous,
           new_full, new_zeros, new_ones, add_, fill_, zero_, copy_)


def install(cls) -> None:
    for fn in METHODS:
        setattr(cls, fn.__name__, fn)
